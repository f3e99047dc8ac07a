package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/llm"
	"github.com/reprompt/reprompt/mcp"
	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/snapshots"
)

// serverEnv makes the test binary an MCP server over stdio (see TestMain).
const serverEnv = "REPROMPT_MCP_TEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) != "" {
		if err := newTestServer().Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "test server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(snapshots.CheckUnused(m))
}

type addArgs struct {
	A int `json:"a" jsonschema:"the first number"`
	B int `json:"b" jsonschema:"the second number"`
}

type sum struct {
	Sum int `json:"sum"`
}

// newTestServer is an MCP server written with the SDK: "add" answers,
// "fail" reports a tool error, "slow" does not answer in time, "crash" ends the
// process, and two resources, one JSON and one text.
func newTestServer() *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "test", Version: "v1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "add", Description: "Add two numbers."},
		func(ctx context.Context, req *sdk.CallToolRequest, in addArgs) (*sdk.CallToolResult, sum, error) {
			return nil, sum{in.A + in.B}, nil
		})
	srv.AddTool(&sdk.Tool{Name: "fail", Description: "Always fails.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "the disk is full"}}}, nil
		})
	srv.AddTool(&sdk.Tool{Name: "slow", Description: "Never answers.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			select { // far longer than the client waits; bounded, so that the test server can close
			case <-ctx.Done():
			case <-time.After(3 * time.Second):
			}
			return nil, errors.New("too late")
		})
	srv.AddTool(&sdk.Tool{Name: "crash", Description: "Ends the server process.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			fmt.Fprintln(os.Stderr, "crashing on purpose")
			os.Exit(3)
			return nil, nil
		})
	srv.AddResource(&sdk.Resource{URI: "config://app", Name: "app config", MIMEType: "application/json"},
		func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: "config://app", MIMEType: "application/json", Text: `{"user_name":"ada","retries":3}`}}}, nil
		})
	srv.AddResource(&sdk.Resource{URI: "note://today", Name: "note", MIMEType: "text/plain"},
		func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: "note://today", MIMEType: "text/plain", Text: "Buy milk."}}}, nil
		})
	return srv
}

// httpServer serves srv over streamable HTTP on a local port.
func httpServer(t *testing.T, srv *sdk.Server) *mcp.Server {
	t.Helper()
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	s := mcp.New(mcp.HTTP(hs.URL), mcp.Options{Name: "test"})
	t.Cleanup(func() {
		_ = s.Close()
		hs.Close()
	})
	return s
}

// stdioServer starts the test binary as an MCP server over stdio.
func stdioServer(t *testing.T, opts mcp.Options) *mcp.Server {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	s := mcp.New(mcp.SDKTransport("test-stdio", func() sdk.Transport {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), serverEnv+"=1")
		return &sdk.CommandTransport{Command: cmd, TerminateDuration: time.Second}
	}), opts)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func agent(s *mcp.Server, opts ...mcp.ToolsOption) prompt.Func {
	return func(p *prompt.Prompt) error {
		if _, err := s.Tools(p, opts...); err != nil {
			return err
		}
		if _, err := s.Resource(p, "config", "config://app"); err != nil {
			return err
		}
		if _, err := s.Resource(p, "note", "note://today"); err != nil {
			return err
		}
		p.User("Add 2 and 3.")
		return nil
	}
}

// An agent using an MCP server's tools and resources, step by step: the
// server's schemas, results and tool errors in the golden file.
func TestAgentWithMCPTools(t *testing.T) {
	s := httpServer(t, newTestServer())
	model := snapshots.Script(
		snapshots.CallTool("add", addArgs{A: 2, B: 3}),
		snapshots.CallTool("fail", struct{}{}),
		snapshots.CallTool("add", map[string]any{"a": "two"}), // invalid: not sent to the server
		snapshots.Text("5"),
	)
	snapshots.Run(t, agent(s, mcp.Only("add", "fail")), model)
}

func TestToolsFilterAndPrefix(t *testing.T) {
	s := httpServer(t, newTestServer())
	var handles map[string]defs.Handle
	fn := func(p *prompt.Prompt) error {
		var err error
		handles, err = s.Tools(p, mcp.Prefix("calc."), mcp.Only("add"), mcp.Idempotent("add"))
		p.User("Add 1 and 2.")
		return err
	}
	// The first run stops (a simulated crash) when the call's result is
	// to be saved.
	ctx := context.Background()
	store := &crashStore{Store: session.NewMemory()}
	res, err := runtime.Run(ctx, snapshots.Script(snapshots.CallTool("calc_add", addArgs{A: 1, B: 2}), snapshots.Text("3")), fn,
		runtime.Config{Store: store, SessionID: "s"})
	require.ErrorIs(t, err, errCrash)
	require.Len(t, handles, 1)
	assert.Contains(t, handles, "calc_add", "the prefixed name, with characters model APIs refuse replaced")
	require.NotEmpty(t, res.Steps)
	tools := res.Steps[0].Request().Tools
	require.Len(t, tools, 1)
	assert.Equal(t, "Add two numbers.", tools[0].Description)

	// Resumed, the call left without a result runs again: the tool was
	// declared idempotent.
	r, err := runtime.Resume(ctx, snapshots.Script(snapshots.Text("3")), fn, runtime.Config{Store: store.Store, SessionID: "s"})
	require.NoError(t, err)
	step, err := r.Next(ctx)
	require.NoError(t, err)
	require.True(t, step.Resumed)
	assert.Empty(t, step.Interrupted, "an idempotent tool runs again")
	require.Len(t, step.ToolResults, 1)
	assert.JSONEq(t, `{"sum":3}`, step.ToolResults[0].Content, "the call reaches the server under its own name")
}

// A tool of the server that needs approval is not sent until approved; the
// server's other tools run at once.
func TestNeedsApproval(t *testing.T) {
	s := httpServer(t, newTestServer())
	fn := func(p *prompt.Prompt) error {
		_, err := s.Tools(p, mcp.Only("add", "fail"), mcp.NeedsApproval("add"))
		p.User("Add 2 and 3.")
		return err
	}
	model := snapshots.Script(
		snapshots.CallTools(snapshots.Call{ID: "a", Name: "add", Args: addArgs{A: 2, B: 3}}, snapshots.Call{ID: "f", Name: "fail"}),
		snapshots.Text("5"),
	)
	r := runtime.New(model, fn, runtime.Config{})
	res, err := r.Run(t.Context())
	require.NoError(t, err)
	require.Len(t, res.Awaiting, 1)
	assert.Equal(t, "a", res.Awaiting[0].CallID)
	require.Len(t, res.Steps[0].ToolResults, 1)
	assert.Equal(t, "f", res.Steps[0].ToolResults[0].CallID, "the other tool ran")
	require.NoError(t, r.Approve("a"))
	res, err = r.Run(t.Context())
	require.NoError(t, err)
	require.Len(t, res.Steps[0].ToolResults, 2)
	assert.JSONEq(t, `{"sum":5}`, res.Steps[0].ToolResults[0].Content)

	// With no names, every tool of the server needs approval.
	fn = func(p *prompt.Prompt) error {
		_, err := s.Tools(p, mcp.Only("add", "fail"), mcp.NeedsApproval())
		p.User("Add 2 and 3.")
		return err
	}
	model = snapshots.Script(snapshots.CallTools(snapshots.Call{ID: "a", Name: "add", Args: addArgs{A: 2, B: 3}}, snapshots.Call{ID: "f", Name: "fail"}))
	r = runtime.New(model, fn, runtime.Config{})
	defer r.Close()
	res, err = r.Run(t.Context())
	require.NoError(t, err)
	assert.Len(t, res.Awaiting, 2)
}

var errCrash = errors.New("simulated crash")

// crashStore fails the first save of a tool result, as a crash there would.
type crashStore struct{ session.Store }

func (s *crashStore) Save(ctx context.Context, cp *session.Checkpoint) error {
	if cp.Pending != nil && len(cp.Pending.Results) > 0 {
		return errCrash
	}
	return s.Store.Save(ctx, cp)
}

// tools runs one step of fn and returns the names of the tools its request
// offered.
func tools(t *testing.T, fn prompt.Func) ([]string, error) {
	t.Helper()
	step, err := runtime.New(snapshots.Script(snapshots.Text("ok")), fn, runtime.Config{}).Next(context.Background())
	if err != nil {
		return nil, err
	}
	return toolNames(step.Request()), nil
}

// The server says its tools changed: the next step's request has them.
func TestToolListChanged(t *testing.T) {
	srv := newTestServer()
	s := httpServer(t, srv)
	ctx := context.Background()
	only := []string{"add"} // "mul" once the server lists it (an unlisted name is an error)
	fn := func(p *prompt.Prompt) error { return agent(s, mcp.Only(only...))(p) }
	r := runtime.New(snapshots.Script(snapshots.CallTool("add", addArgs{1, 1}), snapshots.Text("ok")), fn, runtime.Config{})
	step, err := r.Next(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"add"}, toolNames(step.Request()))

	sdk.AddTool(srv, &sdk.Tool{Name: "mul", Description: "Multiply two numbers."},
		func(ctx context.Context, req *sdk.CallToolRequest, in addArgs) (*sdk.CallToolResult, sum, error) {
			return nil, sum{in.A * in.B}, nil
		})
	require.Eventually(t, func() bool { // the notification is asynchronous
		names, err := tools(t, agent(s, mcp.Only("mul")))
		return err == nil && slices.Contains(names, "mul")
	}, 5*time.Second, 20*time.Millisecond)

	only = append(only, "mul")
	step, err = r.Next(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"add", "mul"}, toolNames(step.Request()))
}

func toolNames(req *llm.Request) []string {
	var names []string
	for _, t := range req.Tools {
		names = append(names, t.Name)
	}
	slices.Sort(names)
	return names
}

func TestResources(t *testing.T) {
	s := httpServer(t, newTestServer())
	res, err := runtime.Run(context.Background(), snapshots.Script(snapshots.Text("ok")), agent(s, mcp.Only()), runtime.Config{})
	require.NoError(t, err)
	sys := res.Steps[0].Request().System
	assert.Contains(t, sys, "<note>Buy milk.</note>")
	assert.Contains(t, sys, "retries: 3", "JSON content is a structured variable")
}

// A call the server never answers is an error result after CallTimeout.
func TestCallTimeout(t *testing.T) {
	srv := newTestServer()
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	defer hs.Close()
	s := mcp.New(mcp.HTTP(hs.URL), mcp.Options{Name: "slowpoke", CallTimeout: 200 * time.Millisecond})
	defer s.Close()
	start := time.Now()
	res, err := runtime.Run(context.Background(), snapshots.Script(snapshots.CallTool("slow", struct{}{}), snapshots.Text("gave up")), agent(s), runtime.Config{})
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 5*time.Second)
	r := res.Steps[0].ToolResults[0]
	assert.True(t, r.IsError)
	assert.Contains(t, r.Content, "MCP server slowpoke did not answer the call of \"slow\": no answer within 200ms")
}

// A server process that dies during a call: the call is an error result,
// and the next call starts the server again.
func TestServerCrashMidCall(t *testing.T) {
	s := stdioServer(t, mcp.Options{})
	res, err := runtime.Run(context.Background(), snapshots.Script(
		snapshots.CallTool("crash", struct{}{}),
		snapshots.CallTool("add", addArgs{A: 20, B: 22}),
		snapshots.Text("42"),
	), agent(s, mcp.Only("crash", "add")), runtime.Config{})
	require.NoError(t, err)
	crash := res.Steps[0].ToolResults[0]
	assert.True(t, crash.IsError)
	assert.Contains(t, crash.Content, "did not answer the call of \"crash\"")
	add := res.Steps[1].ToolResults[0]
	assert.False(t, add.IsError, add.Content)
	assert.JSONEq(t, `{"sum":42}`, add.Content)
}

// A server process started with Command that dies during a call: the
// error result says how it exited and shows the end of its standard error.
func TestCommandCrashMidCall(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	t.Setenv(serverEnv, "1") // the process started is the test server
	s := mcp.New(mcp.Command(exe, "-test.run=^$"), mcp.Options{})
	defer s.Close()
	res, err := runtime.Run(context.Background(), snapshots.Script(
		snapshots.CallTool("crash", struct{}{}),
		snapshots.Text("gone"),
	), agent(s, mcp.Only("crash")), runtime.Config{})
	require.NoError(t, err)
	crash := res.Steps[0].ToolResults[0]
	assert.True(t, crash.IsError)
	assert.Contains(t, crash.Content, "the server process ended (exit status 3), its standard error ending with:\n\tcrashing on purpose")
}

// A server that cannot be started fails the run with a *ConnectError after
// MaxConnects attempts.
func TestConnectFailure(t *testing.T) {
	s := mcp.New(mcp.Command(filepath.Join(t.TempDir(), "no-such-server")), mcp.Options{MaxConnects: 2})
	defer s.Close()
	_, err := runtime.Run(context.Background(), snapshots.Script(snapshots.Text("never")), agent(s), runtime.Config{})
	var ce *mcp.ConnectError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, 2, ce.Tries)
	assert.Contains(t, ce.Server, "no-such-server")
	var pe *prompt.Error
	assert.ErrorAs(t, err, &pe, "the prompt function returned it")
}

func TestClosed(t *testing.T) {
	s := httpServer(t, newTestServer())
	require.NoError(t, s.Close())
	_, err := tools(t, agent(s))
	assert.True(t, errors.Is(err, mcp.ErrClosed), "err = %v", err)
}

// referenceServers returns the directory of the npm reference servers
// (.ci/mcpservers.sh installs them), or skips.
func referenceServers(t *testing.T) string {
	dir := os.Getenv("REPROMPT_MCP_SERVERS")
	if dir == "" {
		require.Equal(t, "", os.Getenv("REPROMPT_MCP_REQUIRED"), "REPROMPT_MCP_SERVERS is not set: run eval \"$(bash .ci/mcpservers.sh)\"")
		t.Skip("the MCP reference servers are not installed: run eval \"$(bash .ci/mcpservers.sh)\" from the repository root")
	}
	return dir
}

// The reference server "everything" from npm, over stdio.
func TestReferenceServerEverything(t *testing.T) {
	dir := referenceServers(t)
	s := mcp.New(mcp.Command(filepath.Join(dir, "mcp-server-everything"), "stdio"), mcp.Options{Name: "everything"})
	defer s.Close()
	fn := func(p *prompt.Prompt) error {
		if _, err := s.Tools(p, mcp.Only("echo", "get-sum"), mcp.Prefix("ev_")); err != nil {
			return err
		}
		p.User("Echo hello.")
		return nil
	}
	res, err := runtime.Run(context.Background(), snapshots.Script(
		snapshots.CallTool("ev_echo", map[string]any{"message": "hello"}),
		snapshots.CallTool("ev_get-sum", map[string]any{"a": 2, "b": 40}),
		snapshots.Text("done"),
	), fn, runtime.Config{})
	require.NoError(t, err)
	assert.Equal(t, []string{"ev_echo", "ev_get-sum"}, toolNames(res.Steps[0].Request()))
	echo := res.Steps[0].ToolResults[0]
	assert.False(t, echo.IsError, echo.Content)
	assert.Contains(t, echo.Content, "hello")
	sum := res.Steps[1].ToolResults[0]
	assert.False(t, sum.IsError, sum.Content)
	assert.Contains(t, sum.Content, "42")
}

// The reference server "filesystem" from npm, over stdio: a file read, and
// a path outside the allowed directory refused as a tool error.
func TestReferenceServerFilesystem(t *testing.T) {
	dir := referenceServers(t)
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "todo.txt"), []byte("call grandma\n"), 0o644))
	s := mcp.New(mcp.Command(filepath.Join(dir, "mcp-server-filesystem"), root), mcp.Options{Name: "filesystem"})
	defer s.Close()
	fn := func(p *prompt.Prompt) error {
		if _, err := s.Tools(p, mcp.Only("read_text_file", "list_directory")); err != nil {
			return err
		}
		p.User("What is in todo.txt?")
		return nil
	}
	res, err := runtime.Run(context.Background(), snapshots.Script(
		snapshots.CallTool("list_directory", map[string]any{"path": root}),
		snapshots.CallTool("read_text_file", map[string]any{"path": filepath.Join(root, "todo.txt")}),
		snapshots.CallTool("read_text_file", map[string]any{"path": "/etc/passwd"}),
		snapshots.Text("call grandma"),
	), fn, runtime.Config{})
	require.NoError(t, err)
	ls := res.Steps[0].ToolResults[0]
	assert.False(t, ls.IsError, ls.Content)
	assert.Contains(t, ls.Content, "todo.txt")
	read := res.Steps[1].ToolResults[0]
	assert.False(t, read.IsError, read.Content)
	assert.Equal(t, "call grandma\n", read.Content)
	denied := res.Steps[2].ToolResults[0]
	assert.True(t, denied.IsError, "a path outside the allowed directory: %s", denied.Content)
}
