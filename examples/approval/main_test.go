package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func runOut(t *testing.T, in string, o options) string {
	t.Helper()
	var b strings.Builder
	if err := run(context.Background(), &b, strings.NewReader(in), o); err != nil {
		t.Fatalf("run: %v\n%s", err, b.String())
	}
	return b.String()
}

func TestDefaultDecisions(t *testing.T) {
	out := runOut(t, "", options{approve: []string{"call_1"}, deny: []string{"call_3"}, reason: "Not this month."})
	want := `step 0: pay {"to":"gym","amount":30} -> paid 30 to gym
awaiting approval: call_1 pay {"to":"landlord","amount":900}
awaiting approval: call_3 pay {"to":"dealer","amount":400}
approving call_1
denying call_3: Not this month.
step 0 (decided): pay {"to":"landlord","amount":900} -> paid 900 to landlord
step 0 (decided): pay {"to":"gym","amount":30} -> paid 30 to gym
step 0 (decided): pay {"to":"dealer","amount":400} -> Not this month.
Done. paid 900 to landlord; paid 30 to gym; Not this month.
`
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
}

func TestAsk(t *testing.T) {
	out := runOut(t, "y\nToo expensive.\n", options{ask: true})
	if !strings.HasSuffix(out, "Done. paid 900 to landlord; paid 30 to gym; Too expensive.\n") {
		t.Errorf("output:\n%s", out)
	}
}

func TestStopAndDecideInAnotherRun(t *testing.T) {
	db := filepath.Join(t.TempDir(), "pay.db")
	out := runOut(t, "", options{db: db, stop: true})
	if !strings.Contains(out, "awaiting approval: call_3") || !strings.Contains(out, "stopped at the pause") {
		t.Fatalf("first run:\n%s", out)
	}
	out = runOut(t, "", options{db: db, approve: []string{"call_1"}})
	if !strings.Contains(out, "resumed session") || !strings.Contains(out, "awaiting approval: call_3") || !strings.Contains(out, "the run stays paused") {
		t.Fatalf("second run (approves one):\n%s", out)
	}
	out = runOut(t, "", options{db: db, approve: []string{"call_3"}})
	if strings.Contains(out, "call_1") && strings.Contains(out, "awaiting approval: call_1") {
		t.Fatalf("the approval of the second run was lost:\n%s", out)
	}
	if !strings.HasSuffix(out, "Done. paid 900 to landlord; paid 30 to gym; paid 400 to dealer\n") {
		t.Fatalf("third run:\n%s", out)
	}
	out = runOut(t, "", options{db: db})
	if !strings.Contains(out, "already finished") {
		t.Fatalf("fourth run:\n%s", out)
	}
}
