package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ev builds one line of `go test -json` output.
func ev(action, pkg, test, output string) string {
	s := `{"Action":"` + action + `","Package":"` + pkg + `"`
	if test != "" {
		s += `,"Test":"` + test + `"`
	}
	if output != "" {
		s += `,"Output":` + strings.ReplaceAll(`"`+strings.ReplaceAll(output, "\n", `\n`)+`"`, "\t", `\t`)
	}
	return s + "}\n"
}

func TestCheck(t *testing.T) {
	allow, err := parseAllowlist(strings.NewReader("# comment\np TestLive needs a key\n"))
	require.NoError(t, err)
	pass := ev("run", "p", "TestA", "") +
		ev("output", "p", "TestA", "=== RUN   TestA\n") +
		ev("output", "p", "TestA", "--- PASS: TestA (0.00s)\n") +
		ev("pass", "p", "TestA", "")
	okLine := ev("output", "p", "", "PASS\n") + ev("output", "p", "", "ok  \tp\t0.1s\n") + ev("pass", "p", "", "")
	tests := []struct {
		name    string
		in      string
		ok      bool
		want    []string // in the output
		notWant []string
	}{
		{"all pass", pass + okLine, true,
			[]string{"ok  \tp\t0.1s\n", "tests: 1 passed, 0 failed, 0 skipped\n", "allowlist line 2 (p ^(?:TestLive)$) matched no skip"},
			[]string{"=== RUN", "--- PASS", "PASS\n"}},
		{"allowed skip", pass +
			ev("output", "p", "TestLive", "    live_test.go:22: set OPENAI_LIVE_TEST=1\n") +
			ev("skip", "p", "TestLive", "") + okLine, true,
			[]string{"allowed skip: p TestLive (needs a key)", "tests: 1 passed, 0 failed, 1 skipped\n"},
			[]string{"live_test.go:22"}},
		{"other skip", pass +
			ev("output", "p", "TestPG/sub", "    pg_test.go:40: REPROMPT_PG_URL is not set\n") +
			ev("skip", "p", "TestPG/sub", "") + okLine, false,
			[]string{"pg_test.go:40: REPROMPT_PG_URL is not set", "skipcheck: FAIL: 1 tests skipped", "\tp TestPG/sub\n"},
			nil},
		{"a skip in another package is not allowed by name alone", pass +
			ev("skip", "q", "TestLive", "") + okLine, false,
			[]string{"\tq TestLive\n"}, nil},
		{"failure", pass +
			ev("output", "p", "TestB", "=== RUN   TestB\n") +
			ev("output", "p", "TestB", "    b_test.go:3: boom\n") +
			ev("output", "p", "TestB", "--- FAIL: TestB (0.00s)\n") +
			ev("fail", "p", "TestB", "") +
			ev("output", "p", "", "FAIL\tp\t0.1s\n") + ev("fail", "p", "", ""), false,
			[]string{"b_test.go:3: boom", "--- FAIL: TestB", "FAIL\tp\t0.1s\n", "tests: 1 passed, 1 failed, 0 skipped\n"},
			[]string{"=== RUN"}},
		{"crash mid-test", pass +
			ev("output", "p", "TestC", "panic: oops\n") +
			ev("output", "p", "", "FAIL\tp\t0.1s\n") + ev("fail", "p", "", ""), false,
			[]string{"panic: oops\n", "FAIL\tp\t0.1s\n"}, nil},
		{"build failure", `{"ImportPath":"p [p.test]","Action":"build-output","Output":"p/x.go:1:1: syntax error\n"}` + "\n" +
			ev("output", "p", "", "FAIL\tp [build failed]\n") + ev("fail", "p", "", ""), false,
			[]string{"p/x.go:1:1: syntax error\n", "FAIL\tp [build failed]\n", "no test passed"}, nil},
		{"no tests", "", false, []string{"no test passed", "tests: 0 passed, 0 failed, 0 skipped\n"}, nil},
		{"not json", "go: downloading x v1.0.0\n" + pass + okLine, true, []string{"go: downloading x v1.0.0\n"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			got := check(strings.NewReader(tt.in), &out, allow)
			assert.Equal(t, tt.ok, got, "check = %t, want %t; output:\n%s", got, tt.ok, out.String())
			for _, w := range tt.want {
				assert.Contains(t, out.String(), w, "output lacks %q:\n%s", w, out.String())
			}
			for _, w := range tt.notWant {
				assert.NotContains(t, out.String(), w, "output has %q:\n%s", w, out.String())
			}
		})
	}
}

func TestParseAllowlist(t *testing.T) {
	for _, bad := range []string{"p TestX\n", "p Test( why\n"} {
		_, err := parseAllowlist(strings.NewReader(bad))
		assert.Error(t, err, "parseAllowlist(%q) took it", bad)
	}
}
