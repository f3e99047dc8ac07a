package snapshots

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGoldenPath(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"TestX", "testdata/TestX.txtar"},
		{"TestX/sub_case", "testdata/TestX/sub_case.txtar"},
		{"TestX/a:b*c?", "testdata/TestX/a_b_c_.txtar"},
		{"TestX/..", "testdata/TestX/___.txtar"},
		{"TestX/", "testdata/TestX/_.txtar"},
	} {
		if got := filepath.ToSlash(goldenPath("testdata", tc.name)); got != tc.want {
			t.Errorf("goldenPath(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestUpdateCommand(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"TestX", `REPROMPT_UPDATE=1 go test ./snapshots -run '^TestX$'`},
		{"TestX/a_b", `REPROMPT_UPDATE=1 go test ./snapshots -run '^TestX$/^a_b$'`},
		{"TestX/1+1", `REPROMPT_UPDATE=1 go test ./snapshots -run '^TestX$/^1\+1$'`},
		{"TestX/it's", `REPROMPT_UPDATE=1 go test ./snapshots -run '^TestX$/^it'\''s$'`},
	} {
		if got := updateCommand(tc.name); got != tc.want {
			t.Errorf("updateCommand(%q) = %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestEnvOn(t *testing.T) {
	for v, want := range map[string]bool{"": false, "0": false, "false": false, "FALSE": false, "1": true, "true": true, "yes": true} {
		t.Setenv("REPROMPT_TEST_ENV", v)
		if got := envOn("REPROMPT_TEST_ENV"); got != want {
			t.Errorf("envOn(%q) = %t, want %t", v, got, want)
		}
	}
}

func TestUnusedGoldens(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) string {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	usedFile := write("TestA.txtar", Header+"\n")
	unusedFile := write("TestB/sub.txtar", Header+"\n")
	oldVersion := write("TestC.txtar", "reprompt snapshot v0\n")
	write("other.txtar", "-- a txtar archive of something else --\n")
	write("TestD.json", Header+"\n")

	got := unusedGoldens([]string{dir, filepath.Join(dir, "missing")}, map[string]bool{usedFile: true})
	if diff := cmp.Diff([]string{unusedFile, oldVersion}, got); diff != "" {
		t.Errorf("unused mismatch (-want +got):\n%s", diff)
	}
}

func TestDiffSections(t *testing.T) {
	want := Header + "\n-- step 0/system --\nA\n-- step 0/state --\nx: 1\n-- end --\nsteps: 1\n"
	got := Header + "\n-- step 0/system --\nB\n-- step 0/reply --\ncontent: hi\n-- end --\nsteps: 1\n"
	d := diffSections(want, got)
	for _, s := range []string{"-- step 0/system --\n", "-- step 0/reply -- (only in got)\n", "-- step 0/state -- (only in want)\n"} {
		if !strings.Contains(d, s) {
			t.Errorf("diff lacks %q:\n%s", s, d)
		}
	}
	if strings.Contains(d, "-- end --") {
		t.Errorf("diff shows an equal section:\n%s", d)
	}
}
