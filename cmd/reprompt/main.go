// Command reprompt shows what a run did, from a session store, a golden
// step file (package snapshots' format) or a recording, rewinds stored
// sessions, posts the user's messages to them, runs evals (package
// evals) and renders their result files.
//
//	go install github.com/reprompt/reprompt/cmd/reprompt@latest
//
// Usage:
//
//	reprompt --store STORE sessions                  list the sessions: id, steps, last update, status
//	reprompt [--store STORE] show SESSION|FILE       the steps as text, each with the diff of its request
//	reprompt [--store STORE] view SESSION|FILE       one self-contained HTML page (-o FILE; --serve to serve it on localhost)
//
// show writes a conversation as a chat log, turn by turn, with each turn's
// steps folded under its answer, one line each (--steps: every step in
// full). view --serve follows a session that is still running: the open
// page shows new steps and turns as they are saved.
//
//	reprompt --store STORE rewind SESSION --to STEP  rewind a stored session to the start of STEP
//	reprompt --store STORE send SESSION TEXT          post TEXT as the user's next message
//	reprompt eval report RESULT [--baseline BASE]     an eval's result file: a table, and an HTML report (-o FILE)
//	reprompt eval run PKG [--baseline BASE]           run the evals of a Go package: go test, a progress bar, then eval report
//
// send posts through the store (session.Inbox): the process that runs the
// session takes the message at its next step, or, if the run has
// finished, as the next turn when it is run again (see runtime.Post).
//
// eval report renders the result file of an eval (package evals: Run
// writes it; Eval.Test writes it to $REPROMPT_EVAL_OUT): the table of the
// cases' figures on standard output, and one self-contained HTML page,
// cases × runs, with each failing check and its step. With --baseline it
// compares the result with an earlier one (evals.Compare) and exits with
// status 1 when a case got significantly worse.
//
// eval run runs the evals of the Go package PKG (evals.Eval.Test) with
// go test -count=1: -run REGEXP selects the tests, and what follows --
// goes to go test (-- -timeout 30m). It draws a progress bar on a
// terminal as the runs end (plain lines otherwise), then does what eval
// report does for each eval that ran: the table, the result file
// DIR/<eval>.json and its page DIR/<eval>.html (-o DIR, default .), the
// comparison with BASE; and each run's steps, a golden step file and its
// page (as view writes it) in DIR/<eval>-runs/<case>/, which the report's
// runs link to. --dataset FILE runs the cases of a dataset file
// (evals.Load) instead of the evals' own, --k N runs each case N times,
// --live builds with -tags live and sets REPROMPT_EVAL=live: the eval
// runs against the live model, not its recordings. When go test fails (a
// build error, a panic, a case below its threshold) its output is shown
// and the exit status is 1. An interrupt (Ctrl-C) stops the eval
// cleanly: its result holds the runs measured.
//
// STORE is sqlite:PATH (a file made by session/sqlite) or a PostgreSQL URL
// (postgres://…); the default is $REPROMPT_STORE. Without a store, SESSION|FILE
// must be a file: a golden step file or a recording.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/reprompt/reprompt/cmd/reprompt/internal/showtext"
	"github.com/reprompt/reprompt/cmd/reprompt/internal/viewer"
	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/session"
	"github.com/reprompt/reprompt/session/postgres"
	"github.com/reprompt/reprompt/session/sqlite"
)

const usage = `usage:
  reprompt --store STORE sessions                  list the sessions: id, steps, last update, status
  reprompt [--store STORE] show SESSION|FILE       the steps as text, each with the diff of its request
                                                   (a conversation: a chat log; --steps: every step in full)
  reprompt [--store STORE] view SESSION|FILE       one self-contained HTML page (-o FILE, or --serve [--addr ADDR]
                                                   to serve it, following the session while it runs)
  reprompt --store STORE rewind SESSION --to STEP  rewind a stored session to the start of STEP
  reprompt --store STORE send SESSION TEXT          post TEXT as the user's next message
  reprompt eval report RESULT [--baseline BASE]     an eval's result file (evals; go test writes it to
                                                   $REPROMPT_EVAL_OUT): a table, and an HTML report (-o FILE);
                                                   exit status 1 when a case got worse than in BASE
  reprompt eval run PKG [--baseline BASE]           run the evals of a Go package with go test (-run REGEXP;
                                                   --dataset FILE, --k N: other cases, runs a case; --live),
                                                   a progress bar, then eval report of each into DIR (-o DIR,
                                                   default .); exit status 1 also when go test failed
                                                   (-- FLAGS: go test's own, as -- -timeout 30m)

STORE is sqlite:PATH or postgres://… (default $REPROMPT_STORE). Without a
store, SESSION|FILE is a file: a golden step file or a recording.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// usageError is a command line that cannot be run: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// run runs the command line args and returns the exit status: 0, 1 for
// an error, 2 for a bad command line.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parse(args)
	if err == nil {
		err = dispatch(ctx, o, stdout, stderr)
	} else if errors.Is(err, errHelp) {
		writeUsage(stdout)
		err = nil
	}
	var ue *usageError
	msg := ""
	if err != nil {
		// No credential of the store in any message, whatever quoted it.
		store := ""
		if o != nil {
			store = o.store
		}
		msg = printableLines(scrub(err.Error(), store))
	}
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "reprompt: %s\n\n%s", msg, usage)
		return 2
	default:
		fmt.Fprintf(stderr, "reprompt: %s\n", msg)
		return 1
	}
}

// printableLines is showtext.Printable for each line of s: an error names
// what a store holds (session ids, damaged data), which must not reach
// the terminal as control sequences.
func printableLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = showtext.Printable(l)
	}
	return strings.Join(lines, "\n")
}

// options are the flags of every command; each command uses its own.
type options struct {
	store    string
	out      string
	baseline string
	serve    bool
	addr     string
	to       int
	width    int
	steps    bool
	toSet    bool
	run      string
	dataset  string
	k        int
	live     bool
	fs       *flag.FlagSet
	params   []string
	goFlags  []string // eval run: after --, go test's flags
}

// newFlagSet returns the flags of every command, set into o.
func newFlagSet(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("reprompt", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.store, "store", o.store, "session store: sqlite:PATH or postgres://… (default $REPROMPT_STORE)")
	fs.StringVar(&o.out, "o", "", "view, eval report: the HTML file to write (default SESSION.html, RESULT.html);\neval run: the directory of the results and their pages (default .)")
	fs.StringVar(&o.baseline, "baseline", "", "eval report, eval run: the result file to compare with")
	fs.BoolVar(&o.serve, "serve", false, "view: serve the page on localhost instead of writing it")
	fs.StringVar(&o.addr, "addr", "127.0.0.1:0", "view --serve: the address to listen on")
	fs.IntVar(&o.to, "to", -1, "rewind: the step to rewind to")
	fs.IntVar(&o.width, "width", 160, "show: the most characters of a message shown (negative: all)")
	fs.BoolVar(&o.steps, "steps", false, "show: every step of a conversation in full, not a chat log")
	fs.StringVar(&o.run, "run", "", "eval run: the tests to run (go test -run)")
	fs.StringVar(&o.dataset, "dataset", "", "eval run: a dataset file (.jsonl, .yaml) to run instead of the evals' cases")
	fs.IntVar(&o.k, "k", 0, "eval run: the runs a case, instead of the evals' K")
	fs.BoolVar(&o.live, "live", false, "eval run: against the live model (go test -tags live, REPROMPT_EVAL=live), not the recordings")
	return fs
}

func parse(args []string) (*options, error) {
	o := &options{store: os.Getenv("REPROMPT_STORE"), to: -1}
	fs := newFlagSet(o)
	o.fs = fs
	// eval run passes what follows -- to go test.
	if i := slices.Index(args, "--"); i >= 0 && evalRunArgs(args[:i]) {
		o.goFlags = append([]string{}, args[i+1:]...)
		args = args[:i]
	}
	// Flags may come before or after the positional arguments.
	for {
		if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
			return nil, errHelp
		} else if err != nil {
			return nil, &usageError{err.Error()}
		}
		if fs.NArg() == 0 {
			break
		}
		o.params = append(o.params, fs.Arg(0))
		args = fs.Args()[1:]
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "to" {
			o.toSet = true
		}
	})
	return o, nil
}

// evalRunArgs reports whether args hold eval, then run.
func evalRunArgs(args []string) bool {
	i := slices.Index(args, "eval")
	return i >= 0 && i+1 < len(args) && args[i+1] == "run"
}

// errHelp is -h, -help or --help: the usage, on standard output.
var errHelp = errors.New("help requested")

// writeUsage writes the usage and the flags.
func writeUsage(w io.Writer) {
	fmt.Fprint(w, usage)
	fmt.Fprint(w, "\nflags:\n")
	fs := newFlagSet(&options{})
	fs.SetOutput(w)
	fs.PrintDefaults()
}

func dispatch(ctx context.Context, o *options, stdout, stderr io.Writer) error {
	if len(o.params) == 0 {
		return &usageError{"no command"}
	}
	cmd, params := o.params[0], o.params[1:]
	switch cmd {
	case "sessions":
		if len(params) != 0 {
			return &usageError{"sessions takes no argument"}
		}
		st, done, err := openStore(ctx, o.store)
		if err != nil {
			return err
		}
		defer done()
		return listSessions(ctx, st, stdout)
	case "show", "view":
		if len(params) != 1 {
			return &usageError{cmd + " takes one SESSION or FILE"}
		}
		if cmd == "show" {
			r, err := load(ctx, o, params[0])
			if r != nil {
				if werr := showtext.Write(stdout, r, showtext.Options{Width: o.width, Steps: o.steps}); werr != nil {
					return werr
				}
			}
			return err
		}
		if o.serve {
			return serve(ctx, o, params[0], stdout)
		}
		r, err := load(ctx, o, params[0])
		if r == nil {
			return err
		}
		out := o.out
		if out == "" {
			out = safeName(r.Title) + ".html"
		}
		if werr := writeHTML(out, r); werr != nil {
			return werr
		}
		fmt.Fprintf(stdout, "wrote %s (%d steps)\n", showtext.Printable(out), len(r.Steps))
		return err
	case "rewind":
		if len(params) != 1 || !o.toSet || o.to < 0 {
			return &usageError{"rewind takes one SESSION and --to STEP (≥ 0)"}
		}
		st, done, err := openStore(ctx, o.store)
		if err != nil {
			return err
		}
		defer done()
		return rewind(ctx, st, params[0], o.to, stdout)
	case "send":
		if len(params) != 2 {
			return &usageError{"send takes one SESSION and one TEXT (quote it)"}
		}
		st, done, err := openStore(ctx, o.store)
		if err != nil {
			return err
		}
		defer done()
		return send(ctx, st, params[0], params[1], o.store, stdout)
	case "eval":
		if len(params) == 2 && params[0] == "run" {
			if fi, err := os.Stat(params[1]); err == nil && !fi.IsDir() {
				return &usageError{fmt.Sprintf("eval run takes a Go package, %s is a file (eval report renders a result file)", params[1])}
			}
			if o.k < 0 {
				return &usageError{"eval run: --k takes a number of runs (≥ 1)"}
			}
			out := o.out
			if out == "" {
				out = "."
			}
			return evalRun(ctx, evalRunOptions{pkg: params[1], run: o.run, dataset: o.dataset, k: o.k,
				baseline: o.baseline, out: out, live: o.live, goFlags: o.goFlags}, stdout, stderr)
		}
		if len(params) == 2 && params[0] == "report" {
			return evalReport(params[1], o.baseline, o.out, stdout)
		}
		return &usageError{"eval takes report and one RESULT file, or run and one PKG"}
	case "help":
		writeUsage(stdout)
		return nil
	}
	return &usageError{fmt.Sprintf("unknown command %q", cmd)}
}

// load reads what arg names: a file when there is one at that path,
// otherwise a session of the store. A damaged session comes back with what
// could be read and a *viewer.DamageError.
func load(ctx context.Context, o *options, arg string) (*viewer.Run, error) {
	if fi, err := os.Stat(arg); err == nil && !fi.IsDir() {
		return viewer.FromFile(arg)
	}
	if o.store == "" {
		return nil, fmt.Errorf("%s: no such file, and no --store (or $REPROMPT_STORE) to find a session of that id in", arg)
	}
	st, done, err := openStore(ctx, o.store)
	if err != nil {
		return nil, err
	}
	defer done()
	r, err := viewer.FromStore(ctx, st, arg)
	if errors.Is(err, session.ErrNotFound) {
		return nil, unknownSession(ctx, st, arg, o.store)
	}
	if r != nil {
		r.Source = "session store " + redact(o.store)
	}
	return r, err
}

// unknownSession says that id is not in the store, and which sessions are.
func unknownSession(ctx context.Context, st session.Store, id, store string) error {
	infos, err := st.List(ctx)
	if err != nil || len(infos) == 0 {
		return fmt.Errorf("unknown session %q: the store %s holds no session", id, redact(store))
	}
	var ids []string
	for i, in := range infos {
		if i == 10 {
			ids = append(ids, fmt.Sprintf("and %d more", len(infos)-10))
			break
		}
		ids = append(ids, in.ID)
	}
	return fmt.Errorf("unknown session %q in %s (sessions: %s)", id, redact(store), strings.Join(ids, ", "))
}

// StoreError reports a store that could not be opened or reached, or,
// with Malformed, a file that is not a SQLite database or a damaged one.
// Store is the store's spec without its credentials (redact).
type StoreError struct {
	Store     string
	Malformed bool
	Err       error
}

func (e *StoreError) Error() string {
	if e.Malformed {
		return fmt.Sprintf("store %s is malformed: the file is not a SQLite database, or a damaged one: %v", e.Store, e.Err)
	}
	return fmt.Sprintf("store %s cannot be reached: %v", e.Store, e.Err)
}

// malformed reports an error of SQLite's that says the file is not a
// database (SQLITE_NOTADB) or is damaged (SQLITE_CORRUPT).
func malformed(err error) bool {
	var coded interface{ Code() int }
	if errors.As(err, &coded) {
		switch coded.Code() & 0xff { // the primary code of an extended one
		case 11, 26: // SQLITE_CORRUPT, SQLITE_NOTADB
			return true
		}
	}
	return false
}
func (e *StoreError) Unwrap() error { return e.Err }

// openStore opens a store named sqlite:PATH or postgres://…; done closes
// it. A SQLite file must exist: reading a session never creates a store.
func openStore(ctx context.Context, spec string) (session.Store, func(), error) {
	switch {
	case spec == "":
		return nil, nil, &usageError{"no store: give --store sqlite:PATH or --store postgres://… (or set $REPROMPT_STORE)"}
	case strings.HasPrefix(spec, "sqlite:"):
		path := strings.TrimPrefix(spec, "sqlite:")
		if _, err := os.Stat(path); err != nil {
			return nil, nil, &StoreError{Store: redact(spec), Err: err}
		}
		// Not another program's database made a store (its tables, WAL).
		st, err := sqlite.OpenConfig(path, sqlite.Config{Existing: true})
		if err != nil {
			return nil, nil, &StoreError{Store: redact(spec), Malformed: malformed(err), Err: err}
		}
		return st, func() { _ = st.Close() }, nil
	case strings.HasPrefix(spec, "postgres://"), strings.HasPrefix(spec, "postgresql://"):
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		st, done, err := openPostgres(cctx, spec)
		if err != nil {
			return nil, nil, &StoreError{Store: redact(spec), Err: err}
		}
		return st, done, nil
	}
	return nil, nil, &usageError{fmt.Sprintf("store %q: want sqlite:PATH or postgres://…", redact(spec))}
}

// openPostgres opens the PostgreSQL store at url (a variable: tests open
// another store in its place, to see what is shown of its URL).
var openPostgres = func(ctx context.Context, url string) (session.Store, func(), error) {
	st, err := postgres.Open(ctx, url)
	if err != nil {
		return nil, nil, err
	}
	return st, st.Close, nil
}

func listSessions(ctx context.Context, st session.Store, w io.Writer) error {
	infos, err := st.List(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tSTEPS\tUPDATED\tSTATUS")
	for _, in := range infos {
		status := "done"
		if !in.Done {
			status = "stopped"
			cp, err := st.Latest(ctx, in.ID)
			switch {
			case err != nil:
				status = "damaged: " + err.Error()
			case cp.Pending != nil:
				status = fmt.Sprintf("interrupted in step %d", cp.Step)
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", showtext.Printable(in.ID), in.Step, in.Updated.Local().Format(time.DateTime), showtext.Printable(status))
	}
	return tw.Flush()
}

// send posts text to session id as the user's message.
func send(ctx context.Context, st session.Store, id, text, store string, w io.Writer) error {
	in, ok := st.(session.Inbox)
	if !ok {
		return fmt.Errorf("the store %s does not take posted messages", redact(store))
	}
	seq, err := in.Post(ctx, id, defs.UserMessage(text))
	if errors.Is(err, session.ErrNotFound) {
		return unknownSession(ctx, st, id, store)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "posted message %d to session %q; it joins the run at its next step (or starts the next turn when the run is continued)\n", seq, id)
	return nil
}

func rewind(ctx context.Context, st session.Store, id string, step int, w io.Writer) error {
	info, err := st.Stat(ctx, id)
	if err != nil {
		if errors.Is(err, session.ErrNotFound) {
			return fmt.Errorf("unknown session %q", id)
		}
		return err
	}
	if step > info.Step {
		// The store may still hold checkpoints of that step from a run
		// rewound earlier: taking one would splice the abandoned run onto
		// this one.
		return fmt.Errorf("rewind %q to step %d: the session is at step %d; rewind goes back, to a step ≤ %d", id, step, info.Step, info.Step)
	}
	cp, err := session.Rewind(ctx, st, id, step)
	if err != nil {
		return fmt.Errorf("rewind %q to step %d (the session is at step %d): %w", id, step, info.Step, err)
	}
	if err := st.Save(ctx, cp); err != nil {
		return fmt.Errorf("rewind %q to step %d: %w", id, step, err)
	}
	if cp.Pending != nil {
		// No checkpoint holds the step's start (the runtime saves none
		// before step 0's model call): AtStep gave one saved mid-step.
		fmt.Fprintf(w, "session %q rewound to step %d after the model's reply (no checkpoint holds the step's start; was at step %d); runtime.Resume completes that step from there\n", id, cp.Step, info.Step)
		return nil
	}
	fmt.Fprintf(w, "session %q rewound to the start of step %d (was at step %d); runtime.Resume continues from there\n", id, cp.Step, info.Step)
	return nil
}

func writeHTML(path string, r *viewer.Run) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := viewer.HTML(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// serve serves the page of arg on localhost, read anew at each request, until
// ctx is done. The page follows the run: every second it asks /steps for
// the steps saved since it was read (viewer.WriteUpdate), answered with 204
// No Content while the session's (or the file's) version is unchanged.
func serve(ctx context.Context, o *options, arg string, stdout io.Writer) error {
	if _, err := load(ctx, o, arg); err != nil {
		var de *viewer.DamageError
		if !errors.As(err, &de) {
			return err
		}
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, req *http.Request) {
		r, err := load(req.Context(), o, arg)
		if r == nil {
			http.Error(w, scrub(err.Error(), o.store), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = viewer.HTMLWith(w, r, viewer.HTMLOptions{Follow: "steps"})
	})
	mux.HandleFunc("GET /steps", func(w http.ResponseWriter, req *http.Request) {
		from, err := strconv.Atoi(req.FormValue("from"))
		if err != nil || from < 0 {
			http.Error(w, "from: want a step index (≥ 0)", http.StatusBadRequest)
			return
		}
		// The version first: a change saved while the run is read shows
		// at the next request.
		v, err := version(req.Context(), o, arg)
		if err != nil {
			http.Error(w, scrub(err.Error(), o.store), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		if v == req.FormValue("v") {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		r, err := load(req.Context(), o, arg)
		if r == nil {
			http.Error(w, scrub(err.Error(), o.store), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = viewer.WriteUpdate(w, r, from, v)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "serving %s on http://%s/ (Ctrl-C to stop)\n", arg, ln.Addr())
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// version identifies what arg holds now: a file's size and modification
// time, or a stored session's latest checkpoint.
func version(ctx context.Context, o *options, arg string) (string, error) {
	if fi, err := os.Stat(arg); err == nil && !fi.IsDir() {
		return fmt.Sprintf("file-%d-%d", fi.Size(), fi.ModTime().UnixNano()), nil
	}
	st, done, err := openStore(ctx, o.store)
	if err != nil {
		return "", err
	}
	defer done()
	info, err := st.Stat(ctx, arg)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("seq-%d-%d-%t", info.Seq, info.Updated.UnixNano(), info.Done), nil
}

// safeName makes a file name of a session id.
func safeName(s string) string {
	s = filepath.Base(s)
	for _, ext := range []string{".txtar", ".json"} {
		s = strings.TrimSuffix(s, ext)
	}
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ':' || r < ' ' {
			return '_'
		}
		return r
	}, s)
}
