package viewer

import (
	"bytes"
	"fmt"
	"os"

	"github.com/reprompt/reprompt/internal/steprec"
)

// FromFile reads a golden step file or a recording, whichever path holds.
// A file that is neither is a *FormatError.
func FromFile(path string) (*Run, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	switch {
	case bytes.HasPrefix(data, []byte(steprec.Header)):
		return FromGolden(path, data)
	case bytes.HasPrefix(trimmed, []byte("{")):
		return FromRecording(path, data)
	}
	first, _, _ := bytes.Cut(data, []byte("\n"))
	return nil, &FormatError{Path: path, Line: 1, Reason: fmt.Sprintf("not a golden step file (its first line is %q, not %q) nor a recording (JSON)", trunc(string(first), 40), steprec.Header)}
}

func trunc(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
