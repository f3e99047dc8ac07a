package openai

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/llm"
)

// TestBaseURLHintOnlyWithoutVersion answers 404 with a body that is not
// OpenAI's: the hint that BaseURL should end in /v1 is given only when it
// does not name a version already; a server at /v1 that answers 404 (a
// model it does not have) gets no such hint (issue 23 item 15).
func TestBaseURLHintOnlyWithoutVersion(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":"model 'llama9' not found, try pulling it first"}`)
	}))
	defer srv.Close()
	tests := []struct {
		base string
		hint bool
	}{
		{"", true},
		{"/", true},
		{"/api", true},
		{"/v1", false},
		{"/v1/", false},
		{"/openai/v1", false},
		{"/api/v1", false},
		{"/v1beta/openai", false},
		{"/api/paas/v4", false},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%q/stream=%t", tt.base, stream), func(t *testing.T) {
				m := New(Config{BaseURL: srv.URL + tt.base, Model: "llama9"})
				var err error
				if stream {
					_, err = m.Stream(context.Background(), userRequest("q"), nil)
				} else {
					_, err = m.Generate(context.Background(), userRequest("q"))
				}
				var me *llm.ModelError
				require.ErrorAs(t, err, &me)
				assert.Equal(t, 404, me.StatusCode)
				assert.Contains(t, me.Message, "model 'llama9' not found")
				if tt.hint {
					assert.Contains(t, me.Message, "/v1", "the hint")
				} else {
					assert.NotContains(t, me.Message, "BaseURL", "no hint when BaseURL names a version")
				}
			})
		}
	}
}
