package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// TestStructured is the example's snapshot, in both modes: every step,
// the invalid answer and the validation error sent back included.
func TestStructured(t *testing.T) {
	for _, mode := range []llm.OutputMode{llm.OutputTool, llm.OutputNative} {
		t.Run(string(mode), func(t *testing.T) {
			res := snapshots.Run(t, Agent, Script(), snapshots.Config(runtime.Config{OutputMode: mode}))
			tr, err := runtime.Output[Triage](res)
			require.NoError(t, err)
			require.Equal(t, 1, tr.Priority)
			require.NotNil(t, tr.Duplicate)
			require.Equal(t, 41, *tr.Duplicate)
		})
	}
}

// TestRunPrints checks what the command prints.
func TestRunPrints(t *testing.T) {
	out := capture(t, func() error { return run(context.Background(), Script(), runtime.Config{}) })
	require.Contains(t, out, `step 1 (answer "triage" asked as tool)`)
	require.Contains(t, out, `want "integer"`)
	require.True(t, strings.HasSuffix(out, "triage: Panic on an empty config file. labels=[bug] priority=1 duplicate=#41\n"), out)
}

func capture(t *testing.T, f func() error) string {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	stdout := os.Stdout
	os.Stdout = w
	defer func() { os.Stdout = stdout }()
	done := make(chan []byte)
	go func() {
		var b bytes.Buffer
		io.Copy(&b, r)
		done <- b.Bytes()
	}()
	ferr := f()
	w.Close()
	out := <-done
	require.NoError(t, ferr)
	return string(out)
}
