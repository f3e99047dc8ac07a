package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/mcp"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/snapshots"
)

// rawRequest is a JSON-RPC message a raw server receives.
type rawRequest struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// rawConn is the server side of a raw connection: send writes one line as
// is (a JSON-RPC message, or garbage).
type rawConn struct {
	mu sync.Mutex
	w  io.WriteCloser
}

func (c *rawConn) send(line string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, _ = io.WriteString(c.w, line+"\n")
}

// result answers the request id with result (JSON).
func (c *rawConn) result(id json.RawMessage, result string) {
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result))
}

// rawServer is an MCP server written by hand, to misbehave as servers
// written by others may: it answers the handshake itself (the legacy
// initialize, tools with listChanged) and passes every other request to
// handle, which answers (or not) through the connection. Each connection
// gets a fresh handler goroutine.
func rawServer(t *testing.T, name string, handle func(c *rawConn, req rawRequest), opts mcp.Options) *mcp.Server {
	s, _ := countedRawServer(t, name, handle, opts)
	return s
}

// countedRawServer is rawServer that also counts the connections made.
func countedRawServer(t *testing.T, name string, handle func(c *rawConn, req rawRequest), opts mcp.Options) (*mcp.Server, *atomic.Int32) {
	t.Helper()
	opts.Name = name
	var conns atomic.Int32
	s := mcp.New(mcp.SDKTransport(name, func() sdk.Transport {
		conns.Add(1)
		cr, sw := io.Pipe() // server → client
		sr, cw := io.Pipe() // client → server
		c := &rawConn{w: sw}
		go func() {
			defer sw.Close()
			sc := bufio.NewScanner(sr)
			sc.Buffer(nil, 1<<24)
			for sc.Scan() {
				var req rawRequest
				if json.Unmarshal(sc.Bytes(), &req) != nil || req.Method == "" {
					continue // a response to a request of the server, or garbage
				}
				switch req.Method {
				case "server/discover":
					c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, req.ID))
				case "initialize":
					c.result(req.ID, `{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true},"resources":{"listChanged":true}},"serverInfo":{"name":"raw","version":"1"}}`)
				case "notifications/initialized", "notifications/cancelled":
				case "ping":
					c.result(req.ID, `{}`)
				default:
					go handle(c, req)
				}
			}
		}()
		return &sdk.IOTransport{Reader: cr, Writer: cw}
	}), opts)
	t.Cleanup(func() { _ = s.Close() })
	return s, &conns
}

// listing answers tools/list with tools (a JSON array) and tools/call with
// call.
func listing(tools string, call func(c *rawConn, req rawRequest)) func(c *rawConn, req rawRequest) {
	return func(c *rawConn, req rawRequest) {
		switch req.Method {
		case "tools/list":
			c.result(req.ID, `{"tools":`+tools+`}`)
		case "tools/call":
			if call != nil {
				call(c, req)
			}
		default:
			c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, req.ID))
		}
	}
}

// runTools runs fn (declaring the server's tools) against the scripted
// replies, and returns the run's result and error.
func runTools(t *testing.T, s *mcp.Server, replies ...snapshots.Reply) (*runtime.Result, error) {
	t.Helper()
	fn := func(p *prompt.Prompt) error {
		if _, err := s.Tools(p); err != nil {
			return err
		}
		p.User("Go.")
		return nil
	}
	return runtime.Run(t.Context(), snapshots.Script(replies...), fn, runtime.Config{})
}

// A tool without an inputSchema (the spec requires one; some servers omit
// it) takes no arguments: it is declared with an empty object schema.
func TestToolWithoutSchema(t *testing.T) {
	s := rawServer(t, "raw", listing(`[{"name":"ping_it","description":"Pings."}]`, func(c *rawConn, req rawRequest) {
		c.result(req.ID, `{"content":[{"type":"text","text":"pong"}]}`)
	}), mcp.Options{})
	res, err := runTools(t, s, snapshots.CallTool("ping_it", struct{}{}), snapshots.Text("ok"))
	require.NoError(t, err)
	assert.Equal(t, []string{"ping_it"}, toolNames(res.Steps[0].Request()))
	r := res.Steps[0].ToolResults[0]
	assert.False(t, r.IsError, r.Content)
	assert.Equal(t, "pong", r.Content)
}

// A tool whose inputSchema cannot be used is a run error naming the server
// and the tool, not a misuse panic pointing into this package.
func TestToolWithBadSchema(t *testing.T) {
	for name, schema := range map[string]string{
		"not an object":   `"a string"`,
		"not type object": `{"type":"string"}`,
		"dangling ref":    `{"type":"object","properties":{"x":{"$ref":"#/$defs/missing"}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			s := rawServer(t, "odd", listing(`[{"name":"good","inputSchema":{"type":"object"}},{"name":"bad","inputSchema":`+schema+`}]`, nil), mcp.Options{})
			_, err := runTools(t, s, snapshots.Text("never"))
			var se *mcp.SchemaError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, "odd", se.Server)
			assert.Equal(t, "bad", se.Tool)
			assert.Contains(t, err.Error(), `mcp: server odd: tool "bad": input schema`)

			// Left out with Only, the server's other tools are usable.
			fn := func(p *prompt.Prompt) error {
				_, err := s.Tools(p, mcp.Only("good"))
				p.User("Go.")
				return err
			}
			res, err := runtime.Run(t.Context(), snapshots.Script(snapshots.Text("ok")), fn, runtime.Config{})
			require.NoError(t, err)
			assert.Equal(t, []string{"good"}, toolNames(res.Steps[0].Request()))
		})
	}
}

// Two tools of one server whose declared names are the same once made
// valid (or cut to 64 bytes), and a tool with an empty name: run errors
// naming the server and the tools.
func TestToolNameCollision(t *testing.T) {
	long := strings.Repeat("y", 70) // a name longer than 64 bytes
	for name, c := range map[string]struct{ tools, want string }{
		"sanitized": {`[{"name":"a.b","inputSchema":{"type":"object"}},{"name":"a_b","inputSchema":{"type":"object"}}]`,
			`mcp: server odd: tools "a.b" and "a_b" are both declared as "a_b"`},
		"cut": {`[{"name":"` + long + `1","inputSchema":{"type":"object"}},{"name":"` + long + `2","inputSchema":{"type":"object"}}]`,
			`are both declared as`},
		"duplicate": {`[{"name":"a","inputSchema":{"type":"object"}},{"name":"a","inputSchema":{"type":"object"}}]`,
			`mcp: server odd: tool "a" is listed twice`},
		"empty": {`[{"name":"","inputSchema":{"type":"object"}}]`,
			`mcp: server odd: a tool has an empty name`},
	} {
		t.Run(name, func(t *testing.T) {
			s := rawServer(t, "odd", listing(c.tools, nil), mcp.Options{})
			_, err := runTools(t, s, snapshots.Text("never"))
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			var pe *prompt.MisuseError
			assert.False(t, errors.As(err, &pe), "not a misuse of the prompt API: %v", err)
		})
	}
}

// A tool error reported without any content is an error result that says
// so, not an empty one.
func TestToolErrorWithoutContent(t *testing.T) {
	s := rawServer(t, "odd", listing(`[{"name":"t","inputSchema":{"type":"object"}}]`, func(c *rawConn, req rawRequest) {
		c.result(req.ID, `{"content":[],"isError":true}`)
	}), mcp.Options{})
	res, err := runTools(t, s, snapshots.CallTool("t", struct{}{}), snapshots.Text("ok"))
	require.NoError(t, err)
	r := res.Steps[0].ToolResults[0]
	assert.True(t, r.IsError)
	assert.Contains(t, r.Content, `failed: MCP server odd reported an error without a message`)
}

// A tool list that cannot be used and would not be if asked again (pages
// that never end, more tools than a listing may hold, a schema nested
// deeper than can be decoded, a list of the wrong shape): a *ListError at
// once, on one connection, not retried and not called "cannot connect".
func TestToolListRecurringFailure(t *testing.T) {
	deep := strings.Repeat("[", 20_000) + strings.Repeat("]", 20_000)
	for name, c := range map[string]struct {
		result, want string
		conns        int32 // after a second use
	}{
		"cursor loop": {`{"tools":[{"name":"t","inputSchema":{"type":"object"}}],"nextCursor":"again"}`,
			`mcp: server odd: the tool list cannot be used: the server handed out the page cursor "again" twice`, 1},
		"too many": {`{"tools":` + manyTools(10_001) + `}`,
			`mcp: server odd: the tool list cannot be used: more than 10000 tools listed`, 1},
		// The SDK cannot read the message: the connection is broken.
		"too deep": {`{"tools":[{"name":"t","inputSchema":{"type":"object","x":` + deep + `}}]}`,
			`mcp: server odd: the tool list cannot be used: calling "tools/list": invalid character '[' exceeded max depth`, 2},
		"wrong shape": {`{"tools":5}`,
			`mcp: server odd: the tool list cannot be used: calling "tools/list": json: cannot unmarshal`, 1},
	} {
		t.Run(name, func(t *testing.T) {
			var lists atomic.Int32
			s, conns := countedRawServer(t, "odd", func(rc *rawConn, req rawRequest) {
				if req.Method == "tools/list" {
					if !strings.Contains(string(req.Params), `"cursor"`) {
						lists.Add(1) // a listing's first page
					}
					rc.result(req.ID, c.result)
				}
			}, mcp.Options{})
			start := time.Now()
			_, err := runTools(t, s, snapshots.Text("never"))
			var le *mcp.ListError
			require.ErrorAs(t, err, &le)
			assert.Equal(t, "odd", le.Server)
			assert.ErrorContains(t, err, c.want)
			var ce *mcp.ConnectError
			assert.False(t, errors.As(err, &ce), "not a *ConnectError: %v", err)
			assert.NotContains(t, err.Error(), "cannot connect")
			assert.Equal(t, int32(1), conns.Load(), "one connection, not retried")
			assert.Equal(t, int32(1), lists.Load(), "listed once, not retried")
			assert.Less(t, time.Since(start), 10*time.Second, "promptly (10,001 tools are slow to decode under -race)")

			// The next use lists again (the server may have been fixed), on
			// the same connection if it still stands.
			_, err = runTools(t, s, snapshots.Text("never"))
			assert.ErrorAs(t, err, &le)
			assert.Equal(t, int32(2), lists.Load(), "listed again")
			assert.Equal(t, c.conns, conns.Load(), "connections after the second use")
		})
	}

	// Garbage on the connection during a listing breaks the connection,
	// not the list: it is tried again on a new one.
	var lists atomic.Int32
	s, conns := countedRawServer(t, "odd", func(rc *rawConn, req rawRequest) {
		if req.Method == "tools/list" {
			if lists.Add(1) == 1 {
				rc.send(`Debugger listening on ws://127.0.0.1:9229`)
				return
			}
			rc.result(req.ID, `{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}`)
		}
	}, mcp.Options{})
	res, err := runTools(t, s, snapshots.Text("ok"))
	require.NoError(t, err, "garbage, then a good list")
	assert.Equal(t, []string{"t"}, toolNames(res.Steps[0].Request()))
	assert.Equal(t, int32(2), conns.Load(), "the broken connection was dropped, a new one made")
}

// A call the runtime gives up on (its ToolTimeout, shorter than
// CallTimeout) is an error result, promptly, and the connection is kept:
// a stdio server is not killed, and its state lost, because one call was
// slow.
func TestToolTimeoutKeepsConnection(t *testing.T) {
	s, conns := countedRawServer(t, "odd", listing(`[{"name":"slow","inputSchema":{"type":"object"}},{"name":"fast","inputSchema":{"type":"object"}}]`,
		func(c *rawConn, req rawRequest) {
			if strings.Contains(string(req.Params), `"fast"`) {
				c.result(req.ID, `{"content":[{"type":"text","text":"done"}]}`)
			} // slow: never answers
		}), mcp.Options{})
	fn := func(p *prompt.Prompt) error {
		_, err := s.Tools(p)
		p.User("Go.")
		return err
	}
	start := time.Now()
	res, err := runtime.Run(t.Context(), snapshots.Script(
		snapshots.CallTool("slow", struct{}{}),
		snapshots.CallTool("fast", struct{}{}),
		snapshots.Text("ok"),
	), fn, runtime.Config{ToolTimeout: 100 * time.Millisecond})
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 5*time.Second)
	slow := res.Steps[0].ToolResults[0]
	assert.True(t, slow.IsError)
	assert.Contains(t, slow.Content, "did not finish within 100ms")
	fast := res.Steps[1].ToolResults[0]
	assert.False(t, fast.IsError, fast.Content)
	assert.Equal(t, "done", fast.Content)
	assert.Equal(t, int32(1), conns.Load(), "one connection: the slow call did not drop it")
}

// A server that sends notifications about its resources before and after
// it answers a read: the read answers at once, and Close, while the
// notifications are still handled, returns (it used to hold the lock the
// handlers wait for while waiting for them).
func TestNotificationDuringResourceRead(t *testing.T) {
	s := rawServer(t, "odd", func(c *rawConn, req rawRequest) {
		switch req.Method {
		case "resources/read":
			c.send(`{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}`)
			c.send(`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"note://a"}}`)
			time.Sleep(50 * time.Millisecond) // the notifications are handled first
			c.result(req.ID, `{"contents":[{"uri":"note://a","mimeType":"text/plain","text":"hello"}]}`)
			for range 200 { // still notifying while the client closes
				c.send(`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"note://a"}}`)
			}
		default:
			c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, req.ID))
		}
	}, mcp.Options{CallTimeout: 2 * time.Second, ConnectTimeout: 2 * time.Second})
	fn := func(p *prompt.Prompt) error {
		if _, err := s.Resource(p, "a", "note://a"); err != nil {
			return err
		}
		if _, err := s.Resource(p, "b", "note://a"); err != nil { // read again: the first read is stale already
			return err
		}
		p.User("Go.")
		return nil
	}
	start := time.Now()
	res, err := runtime.Run(t.Context(), snapshots.Script(snapshots.Text("ok")), fn, runtime.Config{})
	require.NoError(t, err)
	assert.Less(t, time.Since(start), time.Second)
	assert.Contains(t, res.Steps[0].Request().System, "<a>hello</a>")

	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case <-closed:
	case <-time.After(3 * time.Second):
		require.Fail(t, "Close deadlocked with the handler of a notification")
	}
}

// A run cancelled during a call ends the call at once, and the connection
// is kept for the next run: a stdio server is not killed, and its state
// lost, because a caller gave up.
func TestCancelledCallKeepsConnection(t *testing.T) {
	s, conns := countedRawServer(t, "odd", listing(`[{"name":"slow","inputSchema":{"type":"object"}},{"name":"fast","inputSchema":{"type":"object"}}]`,
		func(c *rawConn, req rawRequest) {
			if strings.Contains(string(req.Params), `"fast"`) {
				c.result(req.ID, `{"content":[{"type":"text","text":"done"}]}`)
			} // slow: never answers
		}), mcp.Options{})
	fn := func(p *prompt.Prompt) error {
		_, err := s.Tools(p)
		p.User("Go.")
		return err
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, _ = runtime.Run(ctx, snapshots.Script(snapshots.CallTool("slow", struct{}{}), snapshots.Text("never")), fn, runtime.Config{})
	assert.Less(t, time.Since(start), 5*time.Second)

	res, err := runtime.Run(t.Context(), snapshots.Script(snapshots.CallTool("fast", struct{}{}), snapshots.Text("ok")), fn, runtime.Config{})
	require.NoError(t, err)
	fast := res.Steps[0].ToolResults[0]
	assert.False(t, fast.IsError, fast.Content)
	assert.Equal(t, int32(1), conns.Load(), "one connection: the cancelled call did not drop it")
}

// A huge text result is cut to MaxResultBytes, at a rune boundary, with a
// note saying how much was left out: the model's context is not flooded.
func TestHugeResultIsCut(t *testing.T) {
	huge := strings.Repeat("é", 600_000) // 1.2 MB
	s := rawServer(t, "odd", listing(`[{"name":"dump","inputSchema":{"type":"object"}}]`, func(c *rawConn, req rawRequest) {
		c.result(req.ID, `{"content":[{"type":"text","text":"`+huge+`"}]}`)
	}), mcp.Options{MaxResultBytes: 1001})
	res, err := runTools(t, s, snapshots.CallTool("dump", struct{}{}), snapshots.Text("ok"))
	require.NoError(t, err)
	r := res.Steps[0].ToolResults[0]
	assert.False(t, r.IsError)
	assert.True(t, strings.HasPrefix(r.Content, strings.Repeat("é", 500)+"\n[cut: 1199000 more bytes of the result were left out]"), "%.1200s", r.Content)
	assert.Less(t, len(r.Content), 1100)
}

// Over streamable HTTP, a JSON response body larger than the bound is a
// lost call, not read whole into memory.
func TestHugeHTTPResponse(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req rawRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		switch req.Method {
		case "server/discover":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, req.ID)
		case "initialize":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}}`, req.ID)
		case "tools/list":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"dump","inputSchema":{"type":"object"}}]}}`, req.ID)
		case "tools/call":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, req.ID)
			chunk := strings.Repeat("x", 1<<20)
			for range 40 { // 40 MB, more than the 16 MiB bound
				if _, err := io.WriteString(w, chunk); err != nil {
					return
				}
			}
			fmt.Fprint(w, `"}]}}`)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer hs.Close()
	s := mcp.New(mcp.HTTP(hs.URL), mcp.Options{Name: "odd"})
	defer s.Close()
	res, err := runTools(t, s, snapshots.CallTool("dump", struct{}{}), snapshots.Text("ok"))
	require.NoError(t, err)
	r := res.Steps[0].ToolResults[0]
	assert.True(t, r.IsError)
	assert.Contains(t, r.Content, `MCP server odd did not answer the call of "dump"`)
	assert.Contains(t, r.Content, "more than 16777216 bytes")
}

// A server that writes garbage to its output: a line that is not JSON-RPC
// before its answer.
func TestGarbageOutput(t *testing.T) {
	var calls atomic.Int32
	s, conns := countedRawServer(t, "odd", listing(`[{"name":"t","inputSchema":{"type":"object"}}]`, func(c *rawConn, req rawRequest) {
		if calls.Add(1) == 1 {
			c.send(`Debugger listening on ws://127.0.0.1:9229`)
		}
		c.result(req.ID, `{"content":[{"type":"text","text":"fine"}]}`)
	}), mcp.Options{})
	res, err := runTools(t, s, snapshots.CallTool("t", struct{}{}), snapshots.CallTool("t", struct{}{}), snapshots.Text("ok"))
	require.NoError(t, err)
	first := res.Steps[0].ToolResults[0]
	assert.True(t, first.IsError)
	assert.Contains(t, first.Content, `MCP server odd did not answer the call of "t"`)
	assert.Contains(t, first.Content, "invalid character 'D'")
	second := res.Steps[1].ToolResults[0]
	assert.False(t, second.IsError, second.Content)
	assert.Equal(t, "fine", second.Content)
	assert.Equal(t, int32(2), conns.Load(), "the broken connection was dropped, a new one made")
}

// A server that exits at start, and one that never answers the handshake:
// *ConnectError after MaxConnects attempts, promptly.
func TestServerGoneAtStart(t *testing.T) {
	for name, serve := range map[string]func(r io.ReadCloser, w io.WriteCloser){
		"exits":  func(r io.ReadCloser, w io.WriteCloser) { _ = w.Close(); _ = r.Close() },
		"silent": func(r io.ReadCloser, w io.WriteCloser) { _, _ = io.Copy(io.Discard, r) },
	} {
		t.Run(name, func(t *testing.T) {
			s := mcp.New(mcp.SDKTransport("gone", func() sdk.Transport {
				cr, sw := io.Pipe()
				sr, cw := io.Pipe()
				go serve(sr, sw)
				return &sdk.IOTransport{Reader: cr, Writer: cw}
			}), mcp.Options{MaxConnects: 2, ConnectTimeout: 200 * time.Millisecond})
			defer s.Close()
			start := time.Now()
			_, err := runTools(t, s, snapshots.Text("never"))
			var ce *mcp.ConnectError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, 2, ce.Tries)
			assert.Equal(t, "gone", ce.Server)
			assert.Less(t, time.Since(start), 3*time.Second)
			if name == "silent" {
				assert.Contains(t, err.Error(), "no answer to the handshake within 200ms")
			}
		})
	}
}

// A server that fails to list its tools: *ConnectError naming the listing.
func TestToolListFails(t *testing.T) {
	s := rawServer(t, "odd", func(c *rawConn, req rawRequest) {
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"database is down"}}`, req.ID))
	}, mcp.Options{MaxConnects: 2})
	_, err := runTools(t, s, snapshots.Text("never"))
	var ce *mcp.ConnectError
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, err.Error(), "mcp: server odd: cannot connect after 2 attempts: listing tools: ")
	assert.Contains(t, err.Error(), "database is down")
}

// A call the server refuses with a JSON-RPC error (a tool it no longer
// has, say): an error result with the server's message.
func TestCallRefused(t *testing.T) {
	s, conns := countedRawServer(t, "odd", listing(`[{"name":"t","inputSchema":{"type":"object"}}]`, func(c *rawConn, req rawRequest) {
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"unknown tool \"t\""}}`, req.ID))
	}), mcp.Options{})
	res, err := runTools(t, s, snapshots.CallTool("t", struct{}{}), snapshots.Text("ok"))
	require.NoError(t, err)
	r := res.Steps[0].ToolResults[0]
	assert.True(t, r.IsError)
	assert.Equal(t, `error: tool "t" failed: MCP server odd refused the call: unknown tool "t"`, r.Content)
	assert.Equal(t, int32(1), conns.Load(), "an answer: the connection is kept")
}

// Two servers with a tool of the same name, declared without prefixes: a
// run error naming both declarations (Prefix tells them apart).
func TestToolNameCollidesAcrossServers(t *testing.T) {
	a := rawServer(t, "a", listing(`[{"name":"search","inputSchema":{"type":"object"}}]`, nil), mcp.Options{})
	b := rawServer(t, "b", listing(`[{"name":"search","inputSchema":{"type":"object"}}]`, nil), mcp.Options{})
	fn := func(p *prompt.Prompt) error {
		if _, err := a.Tools(p); err != nil {
			return err
		}
		_, err := b.Tools(p)
		p.User("Go.")
		return err
	}
	_, err := runtime.Run(t.Context(), snapshots.Script(snapshots.Text("never")), fn, runtime.Config{})
	var de *prompt.DuplicateToolError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "search", de.Name)
	// A hook names one call site, its caller's (as slog records one
	// program counter): here the line of mcp that declares the tools.
	assert.Contains(t, de.First, "mcp.go")
	assert.Equal(t, de.First, de.Now)

	fn = func(p *prompt.Prompt) error {
		if _, err := a.Tools(p, mcp.Prefix("a_")); err != nil {
			return err
		}
		_, err := b.Tools(p, mcp.Prefix("b_"))
		p.User("Go.")
		return err
	}
	res, err := runtime.Run(t.Context(), snapshots.Script(snapshots.Text("ok")), fn, runtime.Config{})
	require.NoError(t, err)
	assert.Equal(t, []string{"a_search", "b_search"}, toolNames(res.Steps[0].Request()))
}

// Content the model cannot read as text (an image, audio, a blob, a link)
// is described in a line each, not dropped or sent as base64.
func TestNonTextContent(t *testing.T) {
	s := rawServer(t, "odd", listing(`[{"name":"t","inputSchema":{"type":"object"}}]`, func(c *rawConn, req rawRequest) {
		c.result(req.ID, `{"content":[
			{"type":"text","text":"here:"},
			{"type":"image","mimeType":"image/png","data":"AAECAw=="},
			{"type":"audio","mimeType":"audio/wav","data":"AAE="},
			{"type":"resource","resource":{"uri":"file:///a.bin","mimeType":"application/octet-stream","blob":"AAECAwQ="}},
			{"type":"resource","resource":{"uri":"file:///a.txt","mimeType":"text/plain","text":"inline"}},
			{"type":"resource_link","uri":"file:///b.txt","name":"b"}]}`)
	}), mcp.Options{})
	res, err := runTools(t, s, snapshots.CallTool("t", struct{}{}), snapshots.Text("ok"))
	require.NoError(t, err)
	r := res.Steps[0].ToolResults[0]
	assert.False(t, r.IsError, r.Content)
	assert.Equal(t, "here:\n[image, image/png, 4 bytes]\n[audio, audio/wav, 2 bytes]\n"+
		"[resource file:///a.bin, application/octet-stream, 5 bytes]\ninline\n[resource link b: file:///b.txt]", r.Content)
}

// The Server closed while a call waits for its answer: the call ends at
// once with an error result, and later uses fail with ErrClosed.
func TestCloseDuringCall(t *testing.T) {
	s := rawServer(t, "odd", listing(`[{"name":"slow","inputSchema":{"type":"object"}}]`, nil), mcp.Options{})
	fn := func(p *prompt.Prompt) error {
		_, err := s.Tools(p)
		p.User("Go.")
		return err
	}
	r := runtime.New(snapshots.Script(snapshots.CallTool("slow", struct{}{}), snapshots.Text("ok")), fn, runtime.Config{})
	defer r.Close()
	time.AfterFunc(200*time.Millisecond, func() { _ = s.Close() })
	start := time.Now()
	step, err := r.Next(t.Context())
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 5*time.Second)
	require.Len(t, step.ToolResults, 1)
	assert.True(t, step.ToolResults[0].IsError)
	assert.Contains(t, step.ToolResults[0].Content, `MCP server odd did not answer the call of "slow"`)
	_, err = r.Next(t.Context())
	assert.ErrorIs(t, err, mcp.ErrClosed)
}

// The Server closed while it waits for its tool list: the listing ends at
// once with ErrClosed, and Close does not wait for ConnectTimeout.
func TestCloseDuringListing(t *testing.T) {
	s := rawServer(t, "odd", func(c *rawConn, req rawRequest) {}, mcp.Options{}) // never lists
	time.AfterFunc(200*time.Millisecond, func() { _ = s.Close() })
	start := time.Now()
	_, err := runTools(t, s, snapshots.Text("never"))
	assert.ErrorIs(t, err, mcp.ErrClosed)
	assert.Less(t, time.Since(start), 5*time.Second)
}

// A resource the server says changed while it is being read is read again
// at the next use: the notification is not lost because the read had not
// stored its result yet.
func TestResourceUpdatedDuringRead(t *testing.T) {
	var reads atomic.Int32
	s := rawServer(t, "odd", func(c *rawConn, req rawRequest) {
		switch req.Method {
		case "resources/read":
			n := reads.Add(1)
			if n == 1 {
				c.send(`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"note://a"}}`)
				time.Sleep(50 * time.Millisecond) // the notification is handled during the read
			}
			c.result(req.ID, fmt.Sprintf(`{"contents":[{"uri":"note://a","mimeType":"text/plain","text":"v%d"}]}`, n))
		default:
			c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, req.ID))
		}
	}, mcp.Options{})
	fn := func(p *prompt.Prompt) error {
		_, err := s.Resource(p, "a", "note://a")
		p.User("Go.")
		return err
	}
	r := runtime.New(snapshots.Script(snapshots.CallTool("none", struct{}{}), snapshots.Text("ok")), fn, runtime.Config{})
	defer r.Close()
	step, err := r.Next(t.Context())
	require.NoError(t, err)
	assert.Contains(t, step.Request().System, "<a>v1</a>")
	step, err = r.Next(t.Context())
	require.NoError(t, err)
	assert.Contains(t, step.Request().System, "<a>v2</a>", "read again")
}

// silentServer is a server that reads what it is sent and never answers,
// not even the handshake.
func silentServer(t *testing.T, opts mcp.Options) *mcp.Server {
	t.Helper()
	s := mcp.New(mcp.SDKTransport("silent", func() sdk.Transport {
		cr, _ := io.Pipe()
		sr, cw := io.Pipe()
		go func() { _, _ = io.Copy(io.Discard, sr) }()
		return &sdk.IOTransport{Reader: cr, Writer: cw}
	}), opts)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// A run with a deadline, against a server that never answers the
// handshake, ends at its deadline: connecting, waiting for another run's
// connect, and reading a resource end with the execution's context, not
// after ConnectTimeout × MaxConnects.
func TestRunDeadlineEndsConnect(t *testing.T) {
	opts := mcp.Options{ConnectTimeout: 5 * time.Second} // 15 s in all for three attempts
	deadline := func(fn prompt.Func) (time.Duration, error) {
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := runtime.Run(ctx, snapshots.Script(snapshots.Text("never")), fn, runtime.Config{})
		return time.Since(start), err
	}
	tools := func(s *mcp.Server) prompt.Func {
		return func(p *prompt.Prompt) error {
			_, err := s.Tools(p)
			p.User("Go.")
			return err
		}
	}

	t.Run("tools", func(t *testing.T) {
		took, err := deadline(tools(silentServer(t, opts)))
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Less(t, took, 2*time.Second, "the run ended at its deadline")
	})

	t.Run("waiting for another run", func(t *testing.T) {
		s := silentServer(t, opts)
		other, stop := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { // connects, without a deadline, until stopped
			defer close(done)
			_, _ = runtime.Run(other, snapshots.Script(snapshots.Text("never")), tools(s), runtime.Config{})
		}()
		defer func() { stop(); <-done }()
		time.Sleep(100 * time.Millisecond) // the other run holds the connect
		took, err := deadline(tools(s))
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Less(t, took, 2*time.Second, "the run did not wait for the other's connect")
	})

	t.Run("resource", func(t *testing.T) {
		s := silentServer(t, opts)
		took, err := deadline(func(p *prompt.Prompt) error {
			_, err := s.Resource(p, "a", "note://a")
			p.User("Go.")
			return err
		})
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Less(t, took, 2*time.Second, "the run ended at its deadline")
	})
}

// manyTools is a JSON array of n tools named t0, t1, ….
func manyTools(n int) string {
	tools := make([]string, n)
	for i := range tools {
		tools[i] = fmt.Sprintf(`{"name":"t%d","inputSchema":{"type":"object"}}`, i)
	}
	return "[" + strings.Join(tools, ",") + "]"
}

// A tool whose schema is too large or too deep, and more tools than
// MaxTools: a *LimitError naming the server, the tool and the bound, by
// default; the other tools, chosen with Only, are usable.
func TestToolBounds(t *testing.T) {
	big := `{"type":"object","description":"` + strings.Repeat("x", 70_000) + `"}`
	deep := strings.Repeat(`{"type":"object","properties":{"x":`, 40) + `{"type":"string"}` + strings.Repeat(`}}`, 40)
	for name, c := range map[string]struct {
		tools string
		opts  mcp.Options
		want  mcp.LimitError
		msg   string
		only  string // a tool within the bounds
	}{
		"schema bytes": {`[{"name":"small","inputSchema":{"type":"object"}},{"name":"big","inputSchema":` + big + `}]`, mcp.Options{},
			mcp.LimitError{Server: "odd", Tool: "big", Limit: "MaxSchemaBytes", Max: 65536, Got: 70_034},
			`mcp: server odd: tool "big": input schema of 70034 bytes, more than Options.MaxSchemaBytes (65536)`, "small"},
		"schema bytes set": {`[{"name":"small","inputSchema":{"type":"object"}},{"name":"big","inputSchema":{"type":"object","description":"0123456789"}}]`, mcp.Options{MaxSchemaBytes: 20},
			mcp.LimitError{Server: "odd", Tool: "big", Limit: "MaxSchemaBytes", Max: 20, Got: 44}, `more than Options.MaxSchemaBytes (20)`, "small"},
		"schema depth": {`[{"name":"small","inputSchema":{"type":"object"}},{"name":"deep","inputSchema":` + deep + `}]`, mcp.Options{},
			mcp.LimitError{Server: "odd", Tool: "deep", Limit: "MaxSchemaDepth", Max: 64, Got: 81},
			`mcp: server odd: tool "deep": input schema nested 81 levels deep, more than Options.MaxSchemaDepth (64)`, "small"},
		"tools": {manyTools(200), mcp.Options{},
			mcp.LimitError{Server: "odd", Tool: "t128", Limit: "MaxTools", Max: 128, Got: 200},
			`mcp: server odd: 200 tools to declare, more than Options.MaxTools (128); the first beyond it is "t128"`, "t0"},
	} {
		t.Run(name, func(t *testing.T) {
			s := rawServer(t, "odd", listing(c.tools, nil), c.opts)
			_, err := runTools(t, s, snapshots.Text("never"))
			var le *mcp.LimitError
			require.ErrorAs(t, err, &le)
			assert.Empty(t, cmp.Diff(c.want, *le), "LimitError mismatch (-want +got)")
			assert.ErrorContains(t, err, c.msg)

			fn := func(p *prompt.Prompt) error {
				_, err := s.Tools(p, mcp.Only(c.only))
				p.User("Go.")
				return err
			}
			res, err := runtime.Run(t.Context(), snapshots.Script(snapshots.Text("ok")), fn, runtime.Config{})
			require.NoError(t, err, "the tools Only leaves")
			assert.Len(t, res.Steps[0].Request().Tools, 1, "the tools Only leaves")
		})
	}

	// A negative MaxTools: no bound.
	s := rawServer(t, "odd", listing(manyTools(200), nil), mcp.Options{MaxTools: -1})
	res, err := runTools(t, s, snapshots.Text("ok"))
	require.NoError(t, err)
	assert.Len(t, res.Steps[0].Request().Tools, 200, "MaxTools -1")
}

// A server process that dies at once: the error names the server by its
// command and arguments (credentials hidden) and shows how the process
// exited and the end of its standard error, not only "client is closing:
// EOF".
func TestServerDiesAtStart(t *testing.T) {
	for name, c := range map[string]struct {
		script, server string
		want           mcp.ProcessError
	}{
		"exits": {
			script: `echo "starting" >&2; echo "fatal: OPENAI_API_KEY is not set" >&2; exit 3`,
			server: `sh -c 'echo "starting" >&2; echo "fatal: OPENAI_API_KEY is not set" >&2; exit 3' --api-key=xxxxx --token xxxxx postgres://ada:xxxxx@db/x`,
			want:   mcp.ProcessError{Exit: "exit status 3", Stderr: "starting\nfatal: OPENAI_API_KEY is not set"},
		},
		"long stderr": {
			script: `i=0; while [ $i -lt 2000 ]; do echo "line $i" >&2; i=$((i+1)); done; printf '\033]0;title\007last\n' >&2; kill -9 $$`,
			want:   mcp.ProcessError{Exit: "signal: killed"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			s := mcp.New(mcp.Command("sh", "-c", c.script, "--api-key=s3cret", "--token", "s3cret", "postgres://ada:s3cret@db/x"), mcp.Options{MaxConnects: 1})
			defer s.Close()
			start := time.Now()
			_, err := runTools(t, s, snapshots.Text("never"))
			assert.Less(t, time.Since(start), 5*time.Second)
			var ce *mcp.ConnectError
			require.ErrorAs(t, err, &ce)
			assert.NotContains(t, err.Error(), "s3cret", "credentials in arguments are hidden")
			if c.server != "" {
				assert.Equal(t, c.server, ce.Server)
			}
			var pe *mcp.ProcessError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, c.want.Exit, pe.Exit)
			assert.Equal(t, ce.Server, pe.Command)
			assert.Contains(t, err.Error(), "the server process ended ("+c.want.Exit+"), its standard error ending with:\n\t")
			if c.want.Stderr != "" {
				assert.Equal(t, c.want.Stderr, pe.Stderr)
				assert.Contains(t, err.Error(), "\tstarting\n\tfatal: OPENAI_API_KEY is not set")
				return
			}
			assert.Less(t, len(pe.Stderr), 4200, "the end of standard error only (4 KiB, escapes added)")
			assert.True(t, strings.HasPrefix(pe.Stderr, "line "), "from a line's start: %.20q", pe.Stderr)
			assert.True(t, strings.HasSuffix(pe.Stderr, "line 1999\n\\x1b]0;title\\x07last"), "the end, control characters escaped: %q", pe.Stderr[len(pe.Stderr)-40:])
		})
	}
}

// A tool name given to Only, Idempotent or NeedsApproval that the server
// does not list (misspelt, say): an error naming the server, the option
// and the name, not a tool silently left out or left without approval.
func TestUnknownToolName(t *testing.T) {
	s := rawServer(t, "odd", listing(`[{"name":"read_file","inputSchema":{"type":"object"}},{"name":"write_file","inputSchema":{"type":"object"}}]`, nil), mcp.Options{})
	for name, c := range map[string]struct {
		opts []mcp.ToolsOption
		want mcp.NameError
	}{
		"Only":          {[]mcp.ToolsOption{mcp.Only("read_file", "reed_file")}, mcp.NameError{Server: "odd", Option: "Only", Tool: "reed_file"}},
		"Idempotent":    {[]mcp.ToolsOption{mcp.Idempotent("read_fil")}, mcp.NameError{Server: "odd", Option: "Idempotent", Tool: "read_fil"}},
		"NeedsApproval": {[]mcp.ToolsOption{mcp.NeedsApproval("writefile")}, mcp.NameError{Server: "odd", Option: "NeedsApproval", Tool: "writefile"}},
	} {
		t.Run(name, func(t *testing.T) {
			fn := func(p *prompt.Prompt) error {
				_, err := s.Tools(p, c.opts...)
				p.User("Go.")
				return err
			}
			_, err := runtime.Run(t.Context(), snapshots.Script(snapshots.Text("never")), fn, runtime.Config{})
			var ne *mcp.NameError
			require.ErrorAs(t, err, &ne)
			assert.Equal(t, c.want.Server, ne.Server)
			assert.Equal(t, c.want.Option, ne.Option)
			assert.Equal(t, c.want.Tool, ne.Tool)
			assert.ErrorContains(t, err, fmt.Sprintf(`mcp: server odd: mcp.%s names tool %q, which the server does not list (it lists 2: "read_file", "write_file")`, c.want.Option, c.want.Tool))
		})
	}
}

// Between Close ending the Server's life and taking its lock, the Server
// is closed already: a listing in that window is ErrClosed, never the
// tools listed before (TestCloseDuringCall failed so on a loaded CI
// machine: the call ended, the next step listed the cached tools).
func TestClosedAsSoonAsCloseBegins(t *testing.T) {
	s := rawServer(t, "odd", listing(`[{"name":"t","inputSchema":{"type":"object"}}]`, nil), mcp.Options{})
	_, err := runTools(t, s, snapshots.Text("listed"))
	require.NoError(t, err, "the first listing")
	mcp.EndLife(s) // what Close does first
	_, err = runTools(t, s, snapshots.Text("never"))
	assert.ErrorIs(t, err, mcp.ErrClosed)
}
