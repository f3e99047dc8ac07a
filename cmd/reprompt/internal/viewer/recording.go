package viewer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
)

// recordingFile is the JSON a snapshots.Recorder writes: the replies a
// model gave, in the order the requests came.
type recordingFile struct {
	Version *int `json:"version"`
	Replies []struct {
		Agent     string `json:"agent"`
		Summary   bool   `json:"summary"`
		Text      string `json:"text"`
		Reasoning string `json:"reasoning"`
		Calls     []struct {
			ID        string `json:"id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"calls"`
		Finish string `json:"finish"`
		Usage  *struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
			CachedTokens int `json:"cached_tokens"`
		} `json:"usage"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	} `json:"replies"`
}

// FromRecording reads a recording written by snapshots.Recorder.WriteFile.
// A recording holds the model's replies, not the requests: each reply is a
// step, with its tool calls (without results), finish reason, usage and
// error; a sub-agent's and a summary's replies are marked as such.
func FromRecording(path string, data []byte) (*Run, error) {
	var f recordingFile
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&f); err != nil {
		return nil, &FormatError{Path: path, Reason: fmt.Sprintf("not a recording: %v", err)}
	}
	if f.Version == nil || f.Replies == nil {
		return nil, &FormatError{Path: path, Reason: `not a recording: no "version" and "replies"`}
	}
	if *f.Version != 1 {
		return nil, &FormatError{Path: path, Reason: fmt.Sprintf("recording version %d, this viewer reads version 1", *f.Version)}
	}
	run := newRun(filepath.Base(path), "recording")
	for i, r := range f.Replies {
		s := &Step{Number: i, Finish: r.Finish, Estimated: true}
		m := Message{Role: "assistant", Content: r.Text, Reasoning: r.Reasoning}
		for _, c := range r.Calls {
			m.Calls = append(m.Calls, Call{ID: c.ID, Name: c.Name, Args: c.Arguments})
			s.Calls = append(s.Calls, ToolCall{ID: c.ID, Name: c.Name, Args: c.Arguments})
		}
		s.Reply = run.add(m)
		if r.Usage != nil {
			s.InputTokens, s.PrefixTokens, s.OutputTokens = r.Usage.InputTokens, r.Usage.CachedTokens, r.Usage.OutputTokens
		}
		switch {
		case r.Summary:
			s.Summaries = 1
			s.Label = "summary"
		case r.Agent != "":
			s.Label = "agent " + r.Agent
		}
		if r.Error != nil {
			s.Damage = "the model call failed: " + r.Error.Message
		}
		run.Steps = append(run.Steps, s)
	}
	run.finish()
	run.Notes = append(run.Notes, "a recording holds the model's replies only: no requests, state, effects or tool results")
	return run, nil
}
