package main

import "testing"

// TestTargets runs the baseline and the default strategy over the simulated
// session and checks the figures the defaults are tuned for: nothing over
// the window, no broken pairing, at least 0.85 of the input served from the
// prompt cache, and at most 0.6 of the baseline's billed input.
func TestTargets(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates two 320-step sessions")
	}
	got := map[string]metrics{}
	for _, st := range strategies() {
		if st.name != "baseline" && st.name != "default" {
			continue
		}
		m, err := simulate(st, 320, 1)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if m.overWindow != 0 || m.pairing != 0 {
			t.Errorf("%s: over_window=%d pairing_errors=%d, want 0 and 0", st.name, m.overWindow, m.pairing)
		}
		got[st.name] = m
	}
	def, base := got["default"], got["baseline"]
	t.Logf("default: prefix_reuse=%.3f billed_input=%.0f; baseline: prefix_reuse=%.3f billed_input=%.0f (ratio %.2f)",
		def.reuse(), def.billed, base.reuse(), base.billed, def.billed/base.billed)
	if def.reuse() < 0.85 {
		t.Errorf("default prefix_reuse = %.3f, want at least 0.85", def.reuse())
	}
	if def.billed > 0.6*base.billed {
		t.Errorf("default billed_input = %.0f, more than 0.6 × the baseline's %.0f", def.billed, base.billed)
	}
}
