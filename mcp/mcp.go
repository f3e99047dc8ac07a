// Package mcp lets a prompt function declare the tools and resources of an
// MCP (Model Context Protocol) server as definitions, so that they can be
// disabled, reminded, snapshot-tested and checkpointed like any other.
//
//	fs := mcp.New(mcp.Command("npx", "-y", "@modelcontextprotocol/server-filesystem", dir), mcp.Options{})
//	defer fs.Close()
//
//	func agent(p *prompt.Prompt) error {
//		tools, err := fs.Tools(p, mcp.Only("read_file", "list_directory"), mcp.Prefix("fs_"))
//		if err != nil {
//			return err // a *ConnectError: the server could not be reached
//		}
//		// tools["fs_read_file"].Disable() etc.
//		...
//	}
//
// A Server holds one client connection, opened at the first use and kept
// for as long as the Server lives, not one per step: create it before the
// run and close it after. A connection that fails is opened again at the
// next use, a bounded number of times. The server's tools are listed once
// and listed again at the step after the server says they changed.
// Connecting, listing and reading end with the context of the execution
// that asked (prompt.Prompt.Context), so a run's deadline or cancellation
// is not outlasted by a server that does not answer.
//
// Each MCP tool becomes a tool with the server's JSON Schema, and arguments
// are validated against it before the call is sent (see
// prompt.DefSchemaTool). A tool error reported by the server, a call that
// does not answer within Options.CallTimeout and a connection lost during
// the call are error results for the model, not run errors. A tool without
// an input schema takes no arguments; one whose schema cannot be used is a
// *SchemaError, and tools whose declared names would collide are an error
// naming both, unless Only leaves them out. A result's text is cut to
// Options.MaxResultBytes.
//
// A tool list that cannot be used and would not be at another try (page
// cursors that repeat, more than 10,000 tools, an answer nested too deep
// to decode) is a *ListError, not retried. Bounds on what is declared
// (Options.MaxTools, MaxSchemaBytes, MaxSchemaDepth) are *LimitErrors.
//
// A server started with Command that fails (at start, or during a call)
// is explained by a *ProcessError: how its process exited and the end of
// its standard error; the server is named by its command and arguments.
//
// Package mcp is its own Go module, so that users of reprompt's core do not
// download the MCP SDK.
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/prompt"
)

// Transport says how to reach an MCP server. Command and HTTP make one.
type Transport struct {
	name    string
	connect func() sdk.Transport
}

// Command returns a transport that starts the command and speaks MCP over
// its standard input and output. Each connection starts it anew; closing
// it closes the process's input, then sends SIGTERM, then kills it, a
// second apart. A failure of the process is a *ProcessError with the end
// of its standard error and how it exited. The server is named by the
// command and its arguments, with the values of credential flags
// (--api-key=…) and URL passwords hidden.
func Command(name string, args ...string) Transport {
	line := commandLine(name, args)
	return Transport{name: line, connect: func() sdk.Transport {
		return newProcess(line, exec.Command(name, args...))
	}}
}

// HTTP returns a transport that speaks MCP's streamable HTTP to the
// endpoint url. The server is named by url, its password and credential
// parameters hidden.
func HTTP(url string) Transport {
	return Transport{name: redactURL(url), connect: func() sdk.Transport {
		return &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: limitJSON{http.DefaultTransport}}}
	}}
}

// maxMessage bounds one message read from a server: the MCP SDK bounds a
// line of stdio and an event of a stream at 16 MiB, but reads a JSON
// response body whole.
const maxMessage = 16 << 20

// limitJSON bounds the JSON response bodies of an HTTP transport at
// maxMessage bytes (a longer one fails as it is read).
type limitJSON struct{ next http.RoundTripper }

func (l limitJSON) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(req)
	if err == nil && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		resp.Body = &limitedBody{ReadCloser: resp.Body, left: maxMessage}
	}
	return resp, err
}

type limitedBody struct {
	io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, fmt.Errorf("the server's response is more than %d bytes", maxMessage)
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return 0, fmt.Errorf("the server's response is more than %d bytes", maxMessage)
	}
	return n, err
}

// SDKTransport returns a transport made by connect, which is called for
// every connection: for transports of the MCP SDK that Command and HTTP do
// not cover (in-memory ones in tests, say). name names the server in errors.
func SDKTransport(name string, connect func() sdk.Transport) Transport {
	return Transport{name: name, connect: connect}
}

// Options configure a Server. The zero value is usable.
type Options struct {
	// Name names the server in errors. If empty, the command or URL of the
	// transport is used.
	Name string
	// CallTimeout bounds one tool call or resource read. If zero, 60
	// seconds.
	CallTimeout time.Duration
	// ConnectTimeout bounds one attempt to connect (and to list the tools).
	// If zero, 30 seconds.
	ConnectTimeout time.Duration
	// MaxConnects is how many attempts one use makes to connect before it
	// fails with a *ConnectError. If zero, 3.
	MaxConnects int
	// MaxResultBytes bounds the text of one tool result: longer text is
	// cut, at a UTF-8 boundary, with a note saying how many bytes were
	// left out, so that one call does not flood the model's context. If
	// zero, 1 MiB; if negative, no bound. (Whatever it is, one message from
	// the server is bounded at 16 MiB when read.)
	MaxResultBytes int
	// MaxTools bounds how many tools one Tools call declares (those Only
	// leaves): more is a *LimitError, so that a server listing thousands
	// of tools does not have them all offered in every request. If zero,
	// 128 (the most the OpenAI API accepts in one request); if negative, no
	// bound. It bounds each Server on its own, not a request.
	MaxTools int
	// MaxSchemaBytes bounds the input schema of one declared tool, as JSON:
	// a larger one is a *LimitError naming the tool, as the schema would be
	// sent in every request. If zero, 64 KiB; if negative, no bound.
	MaxSchemaBytes int
	// MaxSchemaDepth bounds how deeply the input schema of one declared
	// tool nests JSON objects and arrays: a deeper one is a *LimitError
	// naming the tool. If zero, 64; if negative, no bound. (Whatever it
	// is, a listing nested more than 10,000 levels deep cannot be decoded,
	// which fails the listing.)
	MaxSchemaDepth int
}

// Server is an MCP server whose tools and resources prompt functions
// declare. It is safe for concurrent use.
type Server struct {
	t    Transport
	opts Options
	name string

	// life ends at Close, and with it the calls still waiting.
	life    context.Context
	endLife context.CancelCauseFunc

	// mu guards cs, closed and tools, and is held while connecting and
	// listing: a use waiting for it gives up when its context ends.
	mu     ctxMutex
	cs     *sdk.ClientSession
	proc   *process // cs's server process, if Command started one
	closed bool
	tools  []listedTool // listed tools; nil: list them at the next use
	// stale is set by the server's notifications: list the tools (or read
	// the resources) again at the next use.
	staleTools atomic.Bool
	// rmu guards resources, alone: the server's notifications take it, and
	// must never wait for mu, which is held while a session closes (and
	// closing waits for the notifications being handled).
	rmu       sync.Mutex
	resources map[string]resource // by URI
	// notes counts the resource notifications, so that a read during
	// which one came stores its result as stale.
	notes uint64
}

type resource struct {
	text  string
	mime  string
	stale bool
}

// New returns a server reached through t. It connects at the first use.
func New(t Transport, opts Options) *Server {
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = 60 * time.Second
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = 30 * time.Second
	}
	if opts.MaxConnects <= 0 {
		opts.MaxConnects = 3
	}
	if opts.MaxResultBytes == 0 {
		opts.MaxResultBytes = 1 << 20
	}
	if opts.MaxTools == 0 {
		opts.MaxTools = 128
	}
	if opts.MaxSchemaBytes == 0 {
		opts.MaxSchemaBytes = 64 << 10
	}
	if opts.MaxSchemaDepth == 0 {
		opts.MaxSchemaDepth = 64
	}
	name := opts.Name
	if name == "" {
		name = t.name
	}
	life, end := context.WithCancelCause(context.Background())
	return &Server{t: t, opts: opts, name: name, life: life, endLife: end, mu: make(ctxMutex, 1), resources: map[string]resource{}}
}

// ctxMutex is a mutex whose lockCtx gives up when a context ends: a use of
// the Server waits for a connect or a listing under way no longer than its
// caller lets it.
type ctxMutex chan struct{}

func (m ctxMutex) Lock()   { m <- struct{}{} }
func (m ctxMutex) Unlock() { <-m }

// lockCtx locks m, or returns the cause of ctx if it ends first.
func (m ctxMutex) lockCtx(ctx context.Context) error {
	select {
	case m <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// useContext returns a context that ends with ctx, or with ErrClosed as
// its cause when the Server is closed.
func (s *Server) useContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(s.life, func() { cancel(ErrClosed) })
	return ctx, func() {
		stop()
		cancel(nil)
	}
}

// ended is the error of a use whose context ended before it did:
// ErrClosed after Close, otherwise the context's cause (the run was
// cancelled, or its deadline passed) with what was under way.
func (s *Server) ended(ctx context.Context, doing string) error {
	cause := context.Cause(ctx)
	if s.life.Err() != nil || errors.Is(cause, ErrClosed) {
		return ErrClosed
	}
	return fmt.Errorf("mcp: server %s: %s: %w", s.name, doing, cause)
}

// Close closes the connection (a command's process is asked to exit).
// The Server cannot be used afterwards.
func (s *Server) Close() error {
	s.endLife(ErrClosed) // calls waiting for an answer end now, and release the session
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.cs == nil {
		return nil
	}
	err := s.cs.Close()
	s.cs, s.proc = nil, nil
	return err
}

// ConnectError is a server that could not be reached after Tries
// attempts, or a request that failed before a connection was made.
type ConnectError struct {
	Server string
	Tries  int
	Err    error
}

func (e *ConnectError) Error() string {
	return fmt.Sprintf("mcp: server %s: cannot connect after %d attempts: %v", e.Server, e.Tries, e.Err)
}

func (e *ConnectError) Unwrap() error { return e.Err }

// ErrClosed is returned by a Server used after Close.
var ErrClosed = errors.New("mcp: server closed")

// session returns the live session, connecting if there is none. It must
// be called with s.mu held.
func (s *Server) session(ctx context.Context) (*sdk.ClientSession, error) {
	if s.closed || s.life.Err() != nil { // Close ends the life first, then takes the lock
		return nil, ErrClosed
	}
	if s.cs != nil {
		return s.cs, nil
	}
	var last error
	for try := 1; try <= s.opts.MaxConnects; try++ {
		if try > 1 {
			select {
			case <-ctx.Done():
				return nil, s.ended(ctx, "connecting")
			case <-time.After(time.Duration(try-1) * 100 * time.Millisecond):
			}
		}
		client := sdk.NewClient(&sdk.Implementation{Name: "reprompt", Version: "v0"}, &sdk.ClientOptions{
			ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { s.staleTools.Store(true) },
			ResourceListChangedHandler: func(context.Context, *sdk.ResourceListChangedRequest) {
				s.staleResources("")
			},
			ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
				s.staleResources(req.Params.URI)
			},
		})
		cctx, cancel := context.WithTimeout(ctx, s.opts.ConnectTimeout)
		t := s.t.connect()
		proc, _ := t.(*process)
		cs, err := client.Connect(cctx, t, nil)
		timedOut := cctx.Err() != nil
		cancel()
		if err != nil && ctx.Err() != nil {
			// The caller gave up, or the Server was closed: no more attempts.
			return nil, s.ended(ctx, "connecting")
		}
		if err != nil && timedOut {
			err = fmt.Errorf("no answer to the handshake within %s: %w", s.opts.ConnectTimeout, err)
		}
		if err != nil && proc != nil {
			err = proc.explain(err)
		}
		if err == nil {
			s.cs, s.proc = cs, proc
			s.tools = nil // list again: the server may have changed
			go s.watch(cs)
			return cs, nil
		}
		last = err
	}
	return nil, &ConnectError{Server: s.name, Tries: s.opts.MaxConnects, Err: last}
}

// watch forgets the session when its connection ends, so that the next use
// connects again.
func (s *Server) watch(cs *sdk.ClientSession) {
	_ = cs.Wait()
	s.mu.Lock()
	if s.cs == cs {
		s.cs, s.proc = nil, nil
	}
	s.mu.Unlock()
}

// drop forgets cs after a request on it failed in a way that means the
// connection is gone.
func (s *Server) drop(cs *sdk.ClientSession) {
	s.mu.Lock()
	if s.cs == cs {
		s.cs, s.proc = nil, nil
	}
	s.mu.Unlock()
	_ = cs.Close()
}

func (s *Server) staleResources(uri string) {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	s.notes++
	for u, r := range s.resources {
		if uri == "" || u == uri {
			r.stale = true
			s.resources[u] = r
		}
	}
}

// ToolsOption chooses which tools of a server Tools declares, and how.
type ToolsOption func(*toolsConfig)

type toolsConfig struct {
	only       map[string]bool
	prefix     string
	idem       map[string]bool
	approve    map[string]bool
	approveAll bool
}

// Only declares only the named tools (their names on the server). A name
// the server does not list is a *NameError, as it is for Idempotent and
// NeedsApproval.
func Only(names ...string) ToolsOption {
	return func(c *toolsConfig) {
		if c.only == nil {
			c.only = map[string]bool{}
		}
		for _, n := range names {
			c.only[n] = true
		}
	}
}

// Prefix declares each tool under prefix+name, to tell apart the tools of
// several servers.
func Prefix(prefix string) ToolsOption { return func(c *toolsConfig) { c.prefix = prefix } }

// Idempotent declares the named tools (their names on the server)
// idempotent: a call left without a result by a crash is run again when the
// session resumes (see prompt.Idempotent).
func Idempotent(names ...string) ToolsOption {
	return func(c *toolsConfig) {
		if c.idem == nil {
			c.idem = map[string]bool{}
		}
		for _, n := range names {
			c.idem[n] = true
		}
	}
}

// NeedsApproval declares that calls of the named tools (their names on the
// server), or of every tool the server lists when no name is given, wait
// for a person's decision before they are sent: the run pauses until the
// call is approved or denied (see prompt.NeedsApproval).
func NeedsApproval(names ...string) ToolsOption {
	return func(c *toolsConfig) {
		if len(names) == 0 {
			c.approveAll = true
			return
		}
		if c.approve == nil {
			c.approve = map[string]bool{}
		}
		for _, n := range names {
			c.approve[n] = true
		}
	}
}

// invalidName matches the characters a tool name may not have in a request
// (the OpenAI API accepts ^[a-zA-Z0-9_-]{1,64}$).
var invalidName = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

// toolName is the name a tool of the server is declared under: prefixed,
// with characters a model API refuses replaced by "_", cut to 64 bytes.
func toolName(prefix, name string) string {
	n := invalidName.ReplaceAllString(prefix+name, "_")
	if len(n) > 64 {
		n = n[:64]
	}
	return n
}

// Tools declares the server's tools as tools of p, in the order the server
// lists them, and returns their handles by declared name. It connects to
// the server at the first use, and lists the tools again after the server
// said they changed. Call it from the prompt function at every execution,
// as any declaration.
//
// It returns a *ConnectError when the server cannot be reached; the prompt
// function should return it, which ends the run with that error. Connecting
// and listing, and waiting for another execution's, end with the
// execution's context (p.Context()): when the run is cancelled or its
// deadline passes, Tools returns an error wrapping the context's cause.
func (s *Server) Tools(p *prompt.Prompt, opts ...ToolsOption) (map[string]defs.Handle, error) {
	var cfg toolsConfig
	for _, o := range opts {
		o(&cfg)
	}
	tools, err := s.listTools(p.Context())
	if err != nil {
		return nil, err
	}
	type decl struct {
		t      listedTool
		remote string
	}
	if err := s.checkNames(tools, cfg); err != nil {
		return nil, err
	}
	var chosen []listedTool
	for _, t := range tools {
		if cfg.only == nil || cfg.only[t.Name] {
			chosen = append(chosen, t)
		}
	}
	if limit := s.opts.MaxTools; limit >= 0 && len(chosen) > limit {
		return nil, &LimitError{Server: s.name, Tool: chosen[limit].Name, Limit: "MaxTools", Max: limit, Got: len(chosen)}
	}
	var decls []decl
	byName := map[string]string{} // declared name → remote name
	for _, t := range chosen {
		if t.Name == "" {
			return nil, fmt.Errorf("mcp: server %s: a tool has an empty name", s.name)
		}
		name := toolName(cfg.prefix, t.Name)
		if other, ok := byName[name]; ok {
			if other == t.Name {
				return nil, fmt.Errorf("mcp: server %s: tool %q is listed twice", s.name, t.Name)
			}
			return nil, fmt.Errorf("mcp: server %s: tools %q and %q are both declared as %q (leave one out with mcp.Only)", s.name, other, t.Name, name)
		}
		if t.err != nil {
			return nil, t.err
		}
		byName[name] = t.Name
		decls = append(decls, decl{t, name})
	}
	out := make(map[string]defs.Handle, len(decls))
	for _, d := range decls {
		t := d.t
		var topts []prompt.ToolOption
		if cfg.idem[t.Name] {
			topts = append(topts, prompt.Idempotent())
		}
		if cfg.approveAll || cfg.approve[t.Name] {
			topts = append(topts, prompt.NeedsApproval())
		}
		name, remote := d.remote, t.Name
		out[name] = p.DefSchemaTool(name, t.Description, t.schema, func(ctx context.Context, args json.RawMessage) (string, error) {
			return s.call(ctx, remote, args)
		}, topts...)
	}
	return out, nil
}

// checkNames returns a *NameError for the first name given to Only,
// Idempotent or NeedsApproval (in that order, each in sorted order) that
// the server does not list.
func (s *Server) checkNames(tools []listedTool, cfg toolsConfig) error {
	listed := make(map[string]bool, len(tools))
	for _, t := range tools {
		listed[t.Name] = true
	}
	for _, o := range []struct {
		option string
		names  map[string]bool
	}{{"Only", cfg.only}, {"Idempotent", cfg.idem}, {"NeedsApproval", cfg.approve}} {
		for _, n := range slices.Sorted(maps.Keys(o.names)) {
			if !listed[n] {
				return &NameError{Server: s.name, Option: o.option, Tool: n, listed: tools}
			}
		}
	}
	return nil
}

// NameError is a tool name given to Only, Idempotent or NeedsApproval that
// the server does not list: a misspelt name would otherwise leave a tool
// out, or let a tool that needs approval run without it, silently.
type NameError struct {
	Server string
	// Option is "Only", "Idempotent" or "NeedsApproval".
	Option string
	Tool   string
	listed []listedTool
}

func (e *NameError) Error() string {
	names := make([]string, 0, 10)
	for _, t := range e.listed {
		if len(names) == cap(names) {
			names = append(names, "…")
			break
		}
		names = append(names, strconv.Quote(t.Name))
	}
	if len(names) == 0 {
		return fmt.Sprintf("mcp: server %s: mcp.%s names tool %q, but the server lists no tools", e.Server, e.Option, e.Tool)
	}
	return fmt.Sprintf("mcp: server %s: mcp.%s names tool %q, which the server does not list (it lists %d: %s)",
		e.Server, e.Option, e.Tool, len(e.listed), strings.Join(names, ", "))
}

// listedTool is a tool as the server listed it, with its input schema
// checked once per listing rather than at every step.
type listedTool struct {
	*sdk.Tool
	schema json.RawMessage // {"type":"object"} when the server gave none
	err    error           // why the tool cannot be declared: a *SchemaError or a *LimitError
}

func (s *Server) newListedTool(t *sdk.Tool) listedTool {
	lt := listedTool{Tool: t, schema: json.RawMessage(`{"type":"object"}`)}
	if t.InputSchema == nil {
		return lt // no arguments
	}
	b, err := json.Marshal(t.InputSchema)
	if err != nil {
		lt.err = &SchemaError{Server: s.name, Tool: t.Name, Err: err}
		return lt
	}
	if limit := s.opts.MaxSchemaBytes; limit >= 0 && len(b) > limit {
		lt.err = &LimitError{Server: s.name, Tool: t.Name, Limit: "MaxSchemaBytes", Max: limit, Got: len(b)}
		c := *t // keep no more of it than its name
		c.InputSchema, c.OutputSchema = nil, nil
		lt.Tool, lt.schema = &c, nil
		return lt
	}
	if limit, depth := s.opts.MaxSchemaDepth, jsonDepth(b); limit >= 0 && depth > limit {
		lt.err = &LimitError{Server: s.name, Tool: t.Name, Limit: "MaxSchemaDepth", Max: limit, Got: depth}
		return lt
	}
	lt.schema = b
	var js jsonschema.Schema
	switch err := json.Unmarshal(b, &js); {
	case err != nil:
		lt.err = &SchemaError{Server: s.name, Tool: t.Name, Err: fmt.Errorf("not a JSON Schema: %w", err)}
	case js.Type != "object":
		lt.err = &SchemaError{Server: s.name, Tool: t.Name, Err: fmt.Errorf("the type must be \"object\", not %q", js.Type)}
	default:
		if _, err := js.Resolve(nil); err != nil {
			lt.err = &SchemaError{Server: s.name, Tool: t.Name, Err: err}
		}
	}
	return lt
}

// jsonDepth returns how deeply the JSON text b nests objects and arrays.
func jsonDepth(b []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString && c == '"':
			inString = false
		case inString:
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// listTools returns the server's tools, listing them if they are not
// known or are stale. It gives up when ctx ends or the Server is closed.
func (s *Server) listTools(ctx context.Context) ([]listedTool, error) {
	ctx, cancel := s.useContext(ctx)
	defer cancel()
	if s.mu.lockCtx(ctx) != nil {
		return nil, s.ended(ctx, "waiting to list tools")
	}
	defer s.mu.Unlock()
	if s.closed || s.life.Err() != nil { // Close ends the life first, then takes the lock
		return nil, ErrClosed
	}
	if s.tools != nil && !s.staleTools.Load() {
		return s.tools, nil
	}
	ctx, cancelTimeout := context.WithTimeout(ctx, s.opts.ConnectTimeout*time.Duration(s.opts.MaxConnects+1))
	defer cancelTimeout()
	for try := 1; ; try++ {
		cs, err := s.session(ctx)
		if s.life.Err() != nil {
			return nil, ErrClosed
		}
		if err != nil {
			return nil, err
		}
		s.staleTools.Store(false)
		tools, err := s.list(ctx, cs)
		if err == nil {
			s.tools = tools
			return tools, nil
		}
		if ctx.Err() != nil {
			// The caller gave up: the connection may be fine, keep it.
			s.staleTools.Store(true)
			return nil, s.ended(ctx, "listing tools")
		}
		le, broken := s.recurs(ctx, cs, err)
		if le != nil && !broken {
			// The server answered with a list that cannot be used: asking
			// again would give the same one. Keep the connection, and list
			// again at the next use (the server may have been fixed).
			s.staleTools.Store(true)
			return nil, le
		}
		proc := s.proc
		if s.cs == cs {
			s.cs, s.proc = nil, nil
		}
		_ = cs.Close()
		if s.life.Err() != nil {
			return nil, ErrClosed
		}
		if le != nil {
			return nil, le // broken by the list itself: no other try
		}
		if proc != nil {
			err = proc.explain(err)
		}
		if try >= s.opts.MaxConnects {
			return nil, &ConnectError{Server: s.name, Tries: try, Err: fmt.Errorf("listing tools: %w", err)}
		}
	}
}

// maxListed bounds how many tools one listing may hold: a server whose
// pages never end is an error, not a growing list.
const maxListed = 10000

// list lists the tools of the server on cs, every page.
func (s *Server) list(ctx context.Context, cs *sdk.ClientSession) ([]listedTool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.ConnectTimeout)
	defer cancel()
	tools := []listedTool{}
	seen := map[string]bool{}
	params := &sdk.ListToolsParams{}
	for {
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			return nil, err
		}
		if len(tools)+len(res.Tools) > maxListed { // before checking their schemas
			return nil, &ListError{Server: s.name, Err: fmt.Errorf("more than %d tools listed", maxListed)}
		}
		for _, t := range res.Tools {
			tools = append(tools, s.newListedTool(t))
		}
		if res.NextCursor == "" {
			return tools, nil
		}
		if seen[res.NextCursor] {
			return nil, &ListError{Server: s.name, Err: fmt.Errorf("the server handed out the page cursor %q twice", res.NextCursor)}
		}
		seen[res.NextCursor] = true
		params = &sdk.ListToolsParams{Cursor: res.NextCursor}
	}
}

// recurs returns the *ListError err is if the listing on cs failed in a
// way that would recur, and whether the connection is broken with it: a
// list over a bound of this package, an answer nested deeper than JSON is
// decoded (which breaks the connection), or an answer of the wrong shape
// on a connection that still answers a ping (garbage on a broken
// connection is not the list's fault). It returns nil for a failure worth
// another try.
func (s *Server) recurs(ctx context.Context, cs *sdk.ClientSession, err error) (le *ListError, broken bool) {
	if errors.As(err, &le) {
		return le, false
	}
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) && strings.HasSuffix(syntax.Error(), "exceeded max depth") {
		return &ListError{Server: s.name, Err: err}, true
	}
	var shape *json.UnmarshalTypeError
	if !errors.As(err, &syntax) && !errors.As(err, &shape) {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.ConnectTimeout)
	defer cancel()
	if cs.Ping(ctx, nil) != nil {
		return nil, false
	}
	return &ListError{Server: s.name, Err: err}, false
}

// ListError is a tool list the server answered with that cannot be used,
// and would not be if asked again: more than 10,000 tools, page cursors
// that repeat, an answer that cannot be decoded (nested more than 10,000
// levels deep, say). It is not retried, and the connection is kept; the
// next use lists again.
type ListError struct {
	Server string
	Err    error
}

func (e *ListError) Error() string {
	return fmt.Sprintf("mcp: server %s: the tool list cannot be used: %v", e.Server, e.Err)
}

func (e *ListError) Unwrap() error { return e.Err }

// ToolError is an error the server reported for a tool call: a result
// marked isError, or a JSON-RPC error answering the call (an unknown tool,
// say). The model receives its text as an error result.
type ToolError struct {
	Server string
	Tool   string
	Text   string
}

func (e *ToolError) Error() string { return e.Text }

// CallError is a tool call that got no answer: the call timed out, or the
// connection was lost during it.
type CallError struct {
	Server string
	Tool   string
	Err    error
}

func (e *CallError) Error() string {
	return fmt.Sprintf("MCP server %s did not answer the call of %q: %v", e.Server, e.Tool, e.Err)
}

func (e *CallError) Unwrap() error { return e.Err }

// errCallTimeout is the cause of a call's context when CallTimeout passed.
var errCallTimeout = errors.New("mcp: call timeout")

func (s *Server) call(ctx context.Context, tool string, args json.RawMessage) (string, error) {
	ctx, closed := context.WithCancelCause(ctx)
	defer closed(nil)
	defer context.AfterFunc(s.life, func() { closed(ErrClosed) })()
	if err := s.mu.lockCtx(ctx); err != nil {
		return "", &CallError{Server: s.name, Tool: tool, Err: err}
	}
	cs, err := s.session(ctx)
	proc := s.proc
	s.mu.Unlock()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, s.opts.CallTimeout, errCallTimeout)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		var wire *jsonrpc.Error
		switch {
		case errors.Is(context.Cause(ctx), errCallTimeout):
			err = fmt.Errorf("no answer within %s", s.opts.CallTimeout)
		case ctx.Err() != nil:
			// The caller gave up (the run was cancelled, or its own
			// deadline passed): the connection is fine, keep it (a
			// command's process, and its state, with it).
			err = context.Cause(ctx)
		case errors.As(err, &wire):
			// The server answered with an error: the connection is fine.
			return "", &ToolError{Server: s.name, Tool: tool, Text: fmt.Sprintf("MCP server %s refused the call: %s", s.name, wire.Message)}
		default:
			// The connection failed (it was closed, the process died, the
			// pipe broke): connect again at the next use.
			s.drop(cs)
			if errors.Is(err, sdk.ErrConnectionClosed) {
				err = errors.New("the connection to the server was lost")
			}
			if proc != nil {
				err = proc.explain(err)
			}
		}
		return "", &CallError{Server: s.name, Tool: tool, Err: err}
	}
	text := cut(contentText(res.Content, res.StructuredContent), s.opts.MaxResultBytes)
	if res.IsError {
		if text == "" {
			text = fmt.Sprintf("MCP server %s reported an error without a message", s.name)
		}
		return "", &ToolError{Server: s.name, Tool: tool, Text: text}
	}
	return text, nil
}

// cut returns text cut to at most max bytes, at a UTF-8 boundary, with a
// note of what was left out; text as is when max is negative.
func cut(text string, max int) string {
	if max < 0 || len(text) <= max {
		return text
	}
	n := max
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	return fmt.Sprintf("%s\n[cut: %d more bytes of the result were left out]", text[:n], len(text)-n)
}

// contentText renders a tool result's content as the text the model reads:
// text parts as they are, embedded text resources by their text, other
// parts by a short description; with no content, the structured content as
// JSON.
func contentText(content []sdk.Content, structured any) string {
	var parts []string
	for _, c := range content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				parts = append(parts, c.Resource.Text)
			} else if c.Resource != nil {
				parts = append(parts, fmt.Sprintf("[resource %s, %s, %d bytes]", c.Resource.URI, c.Resource.MIMEType, len(c.Resource.Blob)))
			}
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image, %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio, %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link %s: %s]", c.Name, c.URI))
		}
	}
	if len(parts) == 0 && structured != nil {
		if b, err := json.Marshal(structured); err == nil {
			return string(b)
		}
	}
	return strings.Join(parts, "\n")
}

// Resource declares the resource at uri as a variable named name: its text
// as a string variable, or, for JSON content (MIME type application/json),
// the decoded value as a structured one (see prompt.Prompt.Def and
// DefData). The resource is read at the first use and read again after the
// server says it changed. Connecting and reading end with the execution's
// context (p.Context()), as in Tools.
func (s *Server) Resource(p *prompt.Prompt, name, uri string) (defs.Handle, error) {
	r, err := s.read(p.Context(), uri)
	if err != nil {
		return defs.Handle{}, err
	}
	if r.mime == "application/json" {
		var v any
		if err := json.Unmarshal([]byte(r.text), &v); err != nil {
			return defs.Handle{}, fmt.Errorf("mcp: server %s: resource %s: not valid JSON: %w", s.name, uri, err)
		}
		return p.DefData(name, v), nil
	}
	return p.Def(name, r.text), nil
}

// read returns the resource at uri, reading it if it is not known or is
// stale. It gives up when ctx ends or the Server is closed.
func (s *Server) read(ctx context.Context, uri string) (resource, error) {
	ctx, cancel := s.useContext(ctx)
	defer cancel()
	if s.mu.lockCtx(ctx) != nil {
		return resource{}, s.ended(ctx, "waiting to read resource "+uri)
	}
	defer s.mu.Unlock()
	if s.closed || s.life.Err() != nil { // Close ends the life first, then takes the lock
		return resource{}, ErrClosed
	}
	s.rmu.Lock()
	r, ok := s.resources[uri]
	notes := s.notes
	s.rmu.Unlock()
	if ok && !r.stale {
		return r, nil
	}
	use := ctx
	ctx, cancelTimeout := context.WithTimeout(use, s.opts.ConnectTimeout+s.opts.CallTimeout)
	defer cancelTimeout()
	cs, err := s.session(ctx)
	if err != nil {
		return resource{}, err
	}
	if caps := cs.InitializeResult().Capabilities; caps != nil && caps.Resources != nil && caps.Resources.Subscribe {
		_ = cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}) // best effort: without it, read once
	}
	res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
	if err != nil && use.Err() != nil {
		return resource{}, s.ended(use, "reading resource "+uri)
	}
	if err != nil {
		return resource{}, fmt.Errorf("mcp: server %s: reading resource %s: %w", s.name, uri, err)
	}
	r = resource{}
	var texts []string
	for _, c := range res.Contents {
		if r.mime == "" {
			r.mime = c.MIMEType
		}
		if c.Text != "" {
			texts = append(texts, c.Text)
		} else if len(c.Blob) > 0 {
			texts = append(texts, fmt.Sprintf("[%s, %d bytes]", c.MIMEType, len(c.Blob)))
		}
	}
	r.text = strings.Join(texts, "\n")
	s.rmu.Lock()
	r.stale = s.notes != notes // it may have changed during the read: read it again at the next use
	s.resources[uri] = r
	s.rmu.Unlock()
	return r, nil
}

// SchemaError is a tool whose input schema, as the server lists it, cannot
// be used: not a JSON Schema of type object, or one whose references do
// not resolve. Leave the tool out with Only to use the server's others.
type SchemaError struct {
	Server string
	Tool   string
	Err    error
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("mcp: server %s: tool %q: input schema: %v (leave the tool out with mcp.Only)", e.Server, e.Tool, e.Err)
}

func (e *SchemaError) Unwrap() error { return e.Err }

// LimitError is a tool, or a number of tools, over a bound of Options: a
// tool whose input schema is larger than MaxSchemaBytes or nests deeper
// than MaxSchemaDepth, or more tools declared by one Tools call than
// MaxTools. Choose the tools to declare with Only (or raise the bound).
type LimitError struct {
	Server string
	// Tool is the tool over the bound; for MaxTools, the first tool
	// beyond it, in the order the server lists them.
	Tool string
	// Limit names the option: "MaxSchemaBytes", "MaxSchemaDepth" or
	// "MaxTools".
	Limit string
	// Max is the bound, Got what the server offered (bytes, levels or
	// tools).
	Max, Got int
}

func (e *LimitError) Error() string {
	switch e.Limit {
	case "MaxTools":
		return fmt.Sprintf("mcp: server %s: %d tools to declare, more than Options.MaxTools (%d); the first beyond it is %q (choose the tools with mcp.Only)", e.Server, e.Got, e.Max, e.Tool)
	case "MaxSchemaDepth":
		return fmt.Sprintf("mcp: server %s: tool %q: input schema nested %d levels deep, more than Options.MaxSchemaDepth (%d) (leave the tool out with mcp.Only)", e.Server, e.Tool, e.Got, e.Max)
	default:
		return fmt.Sprintf("mcp: server %s: tool %q: input schema of %d bytes, more than Options.%s (%d) (leave the tool out with mcp.Only)", e.Server, e.Tool, e.Got, e.Limit, e.Max)
	}
}
