// Package mockllm starts @dwmkerr/mock-llm, an OpenAI-compatible mock
// server from npm, for tests: a server nobody here wrote, scripted with
// rules. .ci/mockllm.sh installs it and sets Env to its command; without
// Env, Start skips the test, and fails it when EnvRequired is set (as CI
// sets it), so that CI never counts the test as passed without running it.
package mockllm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The variables .ci/mockllm.sh sets.
const (
	Env         = "REPROMPT_MOCKLLM"          // the mock-llm command
	EnvRequired = "REPROMPT_MOCKLLM_REQUIRED" // fail, not skip, without Env
)

// Server is a running mock-llm process on a free loopback port.
type Server struct {
	URL   string // http://127.0.0.1:PORT
	mu    sync.Mutex
	lines []string // its stdout: one "METHOD /path" line per request
}

// Rule is one mock-llm rule: a request to Path (with Method, and whose
// body contains Match, when set) gets Response.
type Rule struct {
	Path     string   `json:"path"`
	Method   string   `json:"method,omitempty"`
	Match    string   `json:"match,omitempty"`
	Sequence *int     `json:"sequence,omitempty"`
	Response Response `json:"response"`
}

// Response is what a Rule answers.
type Response struct {
	Status  int    `json:"status"`
	Content string `json:"content"`
}

// Start starts mock-llm for the test, stopped when it ends, or skips the
// test (fails it when EnvRequired is set) if Env is not set.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := os.Getenv(Env)
	if bin == "" {
		require.Empty(t, os.Getenv(EnvRequired), "%s is set but %s is not: run eval \"$(bash .ci/mockllm.sh)\" first", EnvRequired, Env)
		t.Skipf("skipping: %s is not set; run eval \"$(bash .ci/mockllm.sh)\" to install @dwmkerr/mock-llm and run this test", Env)
	}
	port := FreePort(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "mock-llm.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("rules: []\n"), 0o644))
	cmd := exec.Command(bin, "--config", cfg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port), "HOST=127.0.0.1")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start(), "starting %s", bin)
	s := &Server{URL: fmt.Sprintf("http://127.0.0.1:%d", port)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			s.mu.Lock()
			s.lines = append(s.lines, sc.Text())
			s.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
		cmd.Wait()
	})

	WaitHealthy(t, "mock-llm", s.URL, done, func() string {
		return "stdout: " + strings.Join(s.Output(), "\n") + "\nstderr: " + stderr.String()
	})
	return s
}

// FreePort returns a loopback port that was free when it was called, for
// a server process the test starts.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

// WaitHealthy waits until the server name at url answers GET /health with
// 200, and fails the test after 60 s, or at once when exited is closed
// (its process ended first), with what output returns (read only then:
// the process may still be writing it).
func WaitHealthy(t testing.TB, name, url string, exited <-chan struct{}, output func() string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(url + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-exited:
			require.Failf(t, name+" exited", "before answering on %s: %s", url, output())
		default:
		}
		if time.Now().After(deadline) {
			require.Failf(t, name+" did not answer", "on %s within 60s: %v\n%s", url, err, output())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Output returns the lines the server has written so far: one
// "METHOD /path" line per request, in the order they arrived.
func (s *Server) Output() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.lines...)
}

// Configure replaces the server's configuration (its rules, and its
// streaming settings when cfg has them) with cfg, encoded as JSON.
func (s *Server) Configure(t testing.TB, cfg any) {
	t.Helper()
	body, err := json.Marshal(cfg)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodDelete, s.URL+"/config", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	resp, err = http.Post(s.URL+"/config", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "POST /config")
}
