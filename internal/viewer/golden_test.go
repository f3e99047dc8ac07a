package viewer

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGoldenFilesOfTheRepository reads every golden step file of the
// module: none is refused, and each has steps.
func TestGoldenFilesOfTheRepository(t *testing.T) {
	n := 0
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".txtar") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil || !strings.HasPrefix(string(data), goldenHeader) {
			return err
		}
		n++
		run, err := FromGolden(path, data)
		if err != nil {
			t.Errorf("%v", err)
			return nil
		}
		if len(run.Steps) == 0 && run.Error == "" {
			t.Errorf("%s: no steps", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Fatalf("found %d golden files, want at least 10", n)
	}
}
