package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The demo against the server at REPROMPT_TEMPORAL_ADDR (`eval "$(bash
// .ci/temporal.sh)"`); without it the test skips, and with
// REPROMPT_TEMPORAL_REQUIRED=1 it fails instead.
func TestDemo(t *testing.T) {
	addr := os.Getenv("REPROMPT_TEMPORAL_ADDR")
	if addr == "" {
		require.NotEqual(t, "1", os.Getenv("REPROMPT_TEMPORAL_REQUIRED"), "REPROMPT_TEMPORAL_ADDR is not set and REPROMPT_TEMPORAL_REQUIRED=1")
		t.Skip("REPROMPT_TEMPORAL_ADDR is not set")
	}
	c, err := client.Dial(client.Options{HostPort: addr, Logger: quiet()})
	require.NoError(t, err)
	defer c.Close()
	var out strings.Builder
	require.NoError(t, demo(context.Background(), &out, c, fmt.Sprintf("todo-test-%d", time.Now().UnixNano())))
	want := `step 4, waiting false, state {"tasks":["Buy milk","Call Bob"]}
awaiting: call_4 remove_task {"task":"Buy milk"}
  step 0: add_task → added Buy milk
  step 1: The list:- Buy milk
  step 2: add_task → added Call Bob
  step 3: The list:- Buy milk - Call Bob
  step 4: paused for call_4
step 6, waiting true, state {"tasks":["Call Bob"]}
  step 0: add_task → added Buy milk
  step 1: The list:- Buy milk
  step 2: add_task → added Call Bob
  step 3: The list:- Buy milk - Call Bob
  step 4: paused for call_4
  step 4: call_4 approved
  step 4: remove_task → removed Buy milk
  step 5: The list:- Call Bob
result after 6 steps: The list:- Call Bob
`
	assert.Equal(t, want, out.String(), "demo printed\n%s\nwant\n%s", out.String(), want)
}
