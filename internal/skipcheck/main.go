// Command skipcheck reads the output of `go test -json` on standard input,
// prints it as `go test` without -v would (package results, and the output of
// failing tests), and fails when a test failed, when no test ran, or when a
// test skipped that the allowlist does not name. CI uses it so that a test
// that silently skips (a missing server, a missing file) cannot pass as run:
//
//	set -o pipefail
//	go test -json ./... | go run ./internal/skipcheck -allow .ci/allowed-skips
//
// The allowlist has one entry a line: an import path, a regular expression
// that must match the whole test name (subtests included), and the reason;
// '#' starts a comment. Its last line is a count in the form
// "tests: N passed, N failed, N skipped".
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

// event is one line of `go test -json` (see `go doc test2json`).
type event struct {
	Action     string
	Package    string
	ImportPath string // build-output events
	Test       string
	Output     string
}

// allowed is one entry of the allowlist.
type allowed struct {
	pkg    string
	test   *regexp.Regexp
	reason string
	line   int
	used   bool
}

func parseAllowlist(r io.Reader) ([]*allowed, error) {
	var list []*allowed
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 3 {
			return nil, fmt.Errorf("line %d: want a package, a test name and a reason", n)
		}
		re, err := regexp.Compile("^(?:" + f[1] + ")$")
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", n, err)
		}
		list = append(list, &allowed{pkg: f[0], test: re, reason: strings.Join(f[2:], " "), line: n})
	}
	return list, sc.Err()
}

// noise is output `go test` without -v would not show.
func noise(s string) bool {
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME"} {
		if strings.HasPrefix(strings.TrimSpace(s), p) {
			return true
		}
	}
	return s == "PASS\n"
}

// check copies the event stream in to out as described in the package
// comment and reports whether everything passed.
func check(in io.Reader, out io.Writer, allow []*allowed) bool {
	type key struct{ pkg, test string }
	buf := map[key][]string{} // output of tests still running
	var passed, failed, skipped int
	pkgFailed := false
	var badSkips, allowedSkips []string
	flush := func(k key) {
		for _, s := range buf[k] {
			if !noise(s) {
				io.WriteString(out, s)
			}
		}
		delete(buf, k)
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(out, "%s\n", line) // not an event: keep it
			continue
		}
		k := key{e.Package, e.Test}
		switch {
		case e.Action == "build-output":
			io.WriteString(out, e.Output)
		case e.Test == "" && (e.Action == "output" || e.Action == "fail"):
			if e.Action == "fail" || strings.HasPrefix(e.Output, "FAIL") {
				pkgFailed = true
				for b := range buf { // tests cut short by a crash or a timeout
					if b.pkg == e.Package {
						flush(b)
					}
				}
			}
			if !noise(e.Output) {
				io.WriteString(out, e.Output)
			}
		case e.Test == "":
		case e.Action == "output":
			buf[k] = append(buf[k], e.Output)
		case e.Action == "pass":
			passed++
			delete(buf, k)
		case e.Action == "fail":
			failed++
			flush(k)
		case e.Action == "skip":
			skipped++
			name := e.Package + " " + e.Test
			var ok *allowed
			for _, a := range allow {
				if a.pkg == e.Package && a.test.MatchString(e.Test) {
					ok = a
					break
				}
			}
			if ok != nil {
				ok.used = true
				allowedSkips = append(allowedSkips, fmt.Sprintf("%s (%s)", name, ok.reason))
				delete(buf, k)
				continue
			}
			badSkips = append(badSkips, name)
			flush(k)
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(out, "skipcheck: reading the test output: %v\n", err)
		return false
	}
	for _, s := range allowedSkips {
		fmt.Fprintf(out, "skipcheck: allowed skip: %s\n", s)
	}
	for _, a := range allow {
		if !a.used {
			fmt.Fprintf(out, "skipcheck: note: allowlist line %d (%s %s) matched no skip\n", a.line, a.pkg, a.test)
		}
	}
	ok := failed == 0 && !pkgFailed && len(badSkips) == 0 && passed > 0
	if len(badSkips) > 0 {
		fmt.Fprintf(out, "skipcheck: FAIL: %d tests skipped that the allowlist does not name; make them run here, or name them in the allowlist with the reason:\n", len(badSkips))
		for _, s := range badSkips {
			fmt.Fprintf(out, "\t%s\n", s)
		}
	}
	if passed == 0 {
		fmt.Fprintln(out, "skipcheck: FAIL: no test passed (was the input `go test -json` output?)")
	}
	fmt.Fprintf(out, "tests: %d passed, %d failed, %d skipped\n", passed, failed, skipped)
	return ok
}

func main() {
	allowPath := flag.String("allow", "", "allowlist `file` of tests that may skip")
	flag.Parse()
	var allow []*allowed
	if *allowPath != "" {
		f, err := os.Open(*allowPath)
		if err != nil {
			fmt.Fprintln(os.Stderr, "skipcheck:", err)
			os.Exit(2)
		}
		allow, err = parseAllowlist(f)
		f.Close()
		if err != nil {
			fmt.Fprintf(os.Stderr, "skipcheck: %s: %v\n", *allowPath, err)
			os.Exit(2)
		}
	}
	if !check(os.Stdin, os.Stdout, allow) {
		os.Exit(1)
	}
}
