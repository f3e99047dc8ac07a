// Package session makes runs durable: a Checkpoint holds what a run needs to
// continue exactly where it stopped, and a Store keeps the checkpoints of
// many sessions.
//
// With runtime.Config{Store: store, SessionID: "job-42"} a run is
// checkpointed after every step, every reply and every tool result, and
// runtime.Resume continues it after a crash. The stores: NewMemory (in
// the process), session/sqlite (pure Go, the embedded default) and
// session/postgres (pgx). A save writes only what is new (see "Storage
// layout"). The SQLite and PostgreSQL stores version their tables: opening
// a store on an up-to-date database runs no schema statement, so worker
// processes may open stores while sessions run.
//
// # What a checkpoint holds
//
// A checkpoint is taken after every step (and, while a step's tool calls are
// running, after each of them completes). It holds the number of the next
// step, the transcript, the state values as JSON, the effects' dependency
// memory, the identities of the declared messages already added, a step
// interrupted between the model's reply and the end of its tool calls, the
// limits used so far, and the opaque data of built-in effects. The checkpoint
// that ends a step also holds the record of that step (StepRecord: effects
// and why, tokens, tool calls and their durations, commits), for tools that
// show a run; resuming does not need it, and heads saved without one load
// as before.
//
// # Storage layout
//
// A checkpoint is stored as a small versioned JSON head, which holds
// everything but the messages, and the messages as rows keyed by
// (session, generation, index), each its own JSON document. Within one
// generation a transcript only grows, so a Store writes, at each Save, only
// the messages that are not yet stored for that generation: the cost of a
// save does not depend on the length of the history.
//
// A rewrite of earlier messages (trimming a tool result, compaction)
// starts a new generation. Its Checkpoint.Base says how many leading
// messages it shares with the previous generation; the store keeps their
// rows and writes only the messages from Base on, so a rewrite near the
// tail costs only the changed tail, and a session whose every step
// rewrites its last messages stores rows in proportion to its length, not
// to its length times its steps. Base 0 (a compaction of everything, a
// Rewind) writes the whole transcript.
//
// Generations sharing rows form a lineage whose root is the latest
// generation written with Base 0; the head records it (only when it is not
// the checkpoint's own generation, so heads without shared rows are as
// version 1 wrote them). Message i of a checkpoint of generation g and root
// r is the stored row of index i with the highest generation in [r, g].
// Generations only grow, and a new one with a Base follows the latest
// generation directly, so every generation in [r, g] belongs to the
// lineage: a checkpoint of a branch abandoned by a Rewind loads as it was.
//
// The ids of the tool calls that compactions took out of the transcript
// (Checkpoint.RetiredCallIDs) grow with the session too: they are stored
// like messages, beside the heads, as chunks keyed by (session, root,
// first index), each Save writing only the ids its lineage has not stored
// (Write.Retired; Plan plans it, LoadRetired reads it). A head names how
// many it holds. Heads written before (runtime.RetiredCallIDsKey in
// Extra, the whole set in every head) load as they were.
//
// A head is written with the lowest format version that reads it
// correctly (Checkpoint.FormatVersion): version 3 for a checkpoint with
// retired call ids, which a version 2 reader would not see; version 2 for
// a step paused for a person's decision (Pending.Approvals), which a
// version 1 reader would misread; every other head as version 1 wrote it.
//
// # Rules every Store follows
//
//   - Save is atomic: a crash during Save leaves the previous checkpoint
//     loadable.
//   - Save assigns Seq, increasing by one per session, and refuses a
//     checkpoint that does not follow the session's latest one (see
//     ConflictError), so two writers cannot interleave silently.
//   - The first Save of a session gives it a new Incarnation, which every
//     later Save must carry: a session deleted and created again under
//     the same id is another incarnation, which a checkpoint of the
//     deleted one cannot follow, whatever its Seq.
//   - Within one generation, the messages of a later checkpoint extend those
//     of an earlier one; a Save that would break this is refused, as is a
//     Base out of range or in a generation that does not follow the latest
//     one directly.
//   - Loading never panics and never returns a silently wrong checkpoint:
//     a head or message that cannot be decoded, or a head that names more
//     messages than are stored, is a *CorruptError (counts read from
//     storage are checked against the rows found before anything is
//     allocated for them); a head written by a
//     newer version of this package is a *VersionError; an unknown session
//     is a *NotFoundError, which matches ErrNotFound.
//
// Tool-call arguments are stored as the model sent them, byte for byte,
// even when they are not valid JSON (the runtime answers such a call with an
// error result, and the checkpoint still records the call as it was made):
// arguments that encoding/json would not give back exactly are kept in a
// "raw_arguments" field beside their usual form (see EncodeMessage).
//
// The encoding is exported (EncodeHead, DecodeHead, EncodeMessage,
// DecodeMessage, Load, LoadSteps) so that every Store shares it. Package
// sessiontest checks a Store against these rules.
//
// # Reading every step
//
// Calling AtStep for each step of a long session reads each checkpoint's
// whole transcript again: a cost of its steps times its length. A Store
// that is also a StepReader (Memory and the stores of session/sqlite and
// session/postgres are) reads the checkpoints of a range of steps in one
// pass, each stored head and message row once, the checkpoints of one
// lineage sharing their messages; LoadSteps does the decoding for it, with
// Load's checks. AtSteps reads through a StepReader when the store is one,
// and through AtStep otherwise; either way it yields exactly what AtStep
// returns for each step, damage included.
//
// # Resuming safely
//
// No lease is taken: two workers that resume one session at once both
// start its next step, and the one that saves second stops with a
// *ConflictError (inside a *runtime.StepError) before it runs a tool that
// is not idempotent; the session stays the winner's, on every store. So
// does a runtime.New on a stored session id. A checkpoint whose pending
// reply a run could not have written is a *CorruptError. A worker still
// running a session that is deleted and started again under the same id
// stops with a *ConflictError (Recreated) at its next save, even once the
// new session reaches its sequence number: the new session is another
// incarnation. The crash tests (package crashtest, and
// runtime/crashpoints_test.go) kill runs at every save and at random
// moments.
//
// # Posted messages
//
// A Store that is also an Inbox (Memory and the stores of session/sqlite
// and session/postgres are) keeps messages posted to its sessions by other
// processes: Post numbers them per session in commit order, Posted reads
// those after a cursor. The runtime reads them at the start of each step
// and keeps its cursor in the checkpoints (runtime.InboxKey), so a posted
// message joins a run exactly once, even across crashes; runtime.Post and
// `reprompt send` post one. A rewound session's cursor is that of the
// checkpoint it was rewound to: the posts after it join again.
//
// # Rewinding
//
// AtStep returns an earlier checkpoint. To continue a session from it, call
// Rewind, which starts a new generation with Base 0 so that the rewound
// transcript is written anew, and keeps the earlier checkpoints.
package session
