package temporal_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/reprompt/reprompt/prompt"
	"github.com/reprompt/reprompt/runtime"
	rt "github.com/reprompt/reprompt/temporal"
)

const (
	scaleWorkflows = 200
	scaleSteps     = 20 // 19 steps that call a tool, then the answer
)

type addArgs struct {
	N int `json:"n"`
}

// counter is the agent of the scale benchmark: one tool, one state key.
func counter(p *prompt.Prompt) error {
	n, setN := prompt.State(p, "n", 0)
	p.DefSystem("role", "You count.")
	p.Def("n", strconv.Itoa(n))
	prompt.DefTool(p, "add", "Add n.", func(ctx context.Context, a addArgs) (int, error) {
		setN.Update(ctx, func(v int) int { return v + a.N })
		return n + a.N, nil
	})
	p.User("Count.")
	return nil
}

func scaleModel() *stepModel {
	m := &stepModel{final: "Counted."}
	for s := range scaleSteps - 1 {
		m.replies = append(m.replies, calls(s, call(s, 0, "add", addArgs{N: 1})))
	}
	return m
}

func scaleAgent() rt.Agent {
	return rt.Agent{Name: "counter", Prompt: counter, Model: scaleModel()}
}

// BenchmarkScale runs 200 agent workflows of 20 steps each at once against
// the server at REPROMPT_TEMPORAL_ADDR, with scripted models, on one and on
// two worker processes (and one workflow alone, for the latency without
// contention), and reports throughput (steps/s) and the step
// latency Temporal adds (p50 and p99: the time between the scheduling of a
// workflow's consecutive model activities, from the server's history,
// less the time a step takes in process). Run it by hand, once:
//
//	eval "$(bash .ci/temporal.sh)"
//	cd temporal && REPROMPT_TEMPORAL_SLOTS=4 go test -run '^$' -bench Scale -benchtime 1x -timeout 30m
//
// (REPROMPT_TEMPORAL_SLOTS: see workerOptions; the README has the figures.)
func BenchmarkScale(b *testing.B) {
	addr := serverAddr(b)
	c := dial(b, addr)

	// A step in process, for comparison.
	start := time.Now()
	const inProcess = 200
	for range inProcess {
		_, err := runtime.Run(context.Background(), scaleModel(), counter, runtime.Config{})
		require.NoError(b, err)
	}
	local := time.Since(start) / (inProcess * scaleSteps)

	for _, size := range []struct{ workflows, workers int }{{1, 1}, {scaleWorkflows, 1}, {scaleWorkflows, 2}} {
		workflows, workers := size.workflows, size.workers
		b.Run(fmt.Sprintf("workflows=%d/workers=%d", workflows, workers), func(b *testing.B) {
			for range b.N {
				queue := fmt.Sprintf("reprompt-scale-%d-%d-%d", workflows, workers, time.Now().UnixNano())
				dir := b.TempDir()
				var procs []func()
				for range workers {
					cmd := startWorker(b, queue, dir)
					procs = append(procs, func() { _ = cmd.Process.Kill() })
				}
				steps, lat, wall := scaleRun(b, c, queue, workflows)
				for _, kill := range procs {
					kill()
				}
				slices.Sort(lat)
				p := func(q float64) time.Duration { return lat[int(q*float64(len(lat)-1))] }
				b.ReportMetric(float64(steps)/wall.Seconds(), "steps/s")
				b.ReportMetric(float64((p(0.5)-local).Microseconds())/1000, "p50-added-ms")
				b.ReportMetric(float64((p(0.99)-local).Microseconds())/1000, "p99-added-ms")
				b.ReportMetric(float64(local.Microseconds())/1000, "in-process-step-ms")
				b.Logf("%d workflows, %d workers: %d steps in %v: %.0f steps/s; step latency p50 %v, p99 %v (in process %v)",
					workflows, workers, steps, wall.Round(time.Millisecond), float64(steps)/wall.Seconds(), p(0.5), p(0.99), local)
			}
		})
	}
}

// scaleRun starts the workflows at once, waits for them, and returns the
// steps run, the step latencies and the wall time.
func scaleRun(b *testing.B, c client.Client, queue string, workflows int) (int, []time.Duration, time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, workflows)
	ids := make([]string, workflows)
	for i := range workflows {
		ids[i] = fmt.Sprintf("%s-%d", queue, i)
		wg.Go(func() {
			run, err := rt.Start(ctx, c, client.StartWorkflowOptions{ID: ids[i], TaskQueue: queue}, rt.Input{Agent: "counter"})
			if err == nil {
				var res rt.Result
				if err = run.Get(ctx, &res); err == nil && res.Steps != scaleSteps {
					err = fmt.Errorf("%s: %d steps, want %d", ids[i], res.Steps, scaleSteps)
				}
			}
			errs <- err
		})
	}
	wg.Wait()
	wall := time.Since(start)
	close(errs)
	for err := range errs {
		require.NoError(b, err)
	}
	var lat []time.Duration
	timeouts := 0
	var runs []time.Duration // from start to completion, by workflow
	for _, id := range ids {
		var prev, started time.Time
		it := c.GetWorkflowHistory(ctx, id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			require.NoError(b, err)
			var at time.Time
			switch ev.GetEventType() {
			case enums.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
				started = ev.GetEventTime().AsTime()
				continue
			case enums.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
				timeouts++
				continue
			case enums.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
				if ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName() != rt.ActivityGenerate {
					continue
				}
				at = ev.GetEventTime().AsTime()
			case enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
				at = ev.GetEventTime().AsTime()
				runs = append(runs, at.Sub(started))
			default:
				continue
			}
			if !prev.IsZero() {
				lat = append(lat, at.Sub(prev))
			}
			prev = at
		}
	}
	b.ReportMetric(float64(timeouts), "workflow-task-timeouts")
	slices.Sort(runs)
	b.ReportMetric(runs[len(runs)/2].Seconds(), "p50-workflow-s")
	b.ReportMetric(runs[len(runs)-1].Seconds(), "max-workflow-s")
	return workflows * scaleSteps, lat, wall
}
