// Package session makes runs durable: a Checkpoint holds what a run needs to
// continue exactly where it stopped, and a Store keeps the checkpoints of
// many sessions.
//
// # What a checkpoint holds
//
// A checkpoint is taken after every step (and, while a step's tool calls are
// running, after each of them completes). It holds the number of the next
// step, the transcript, the state values as JSON, the effects' dependency
// memory, the identities of the declared messages already added, a step
// interrupted between the model's reply and the end of its tool calls, the
// limits used so far, and the opaque data of built-in effects.
//
// # Storage layout
//
// A checkpoint is stored as a small versioned JSON head, which holds
// everything but the messages, and the messages as rows keyed by
// (session, generation, index), each its own JSON document. Within one
// generation a transcript only grows, so a Store writes, at each Save, only
// the messages that are not yet stored for that generation: the cost of a
// save does not depend on the length of the history. A rewrite of earlier
// messages (compaction) starts a new generation, whose messages are written
// once in full.
//
// # Rules every Store follows
//
//   - Save is atomic: a crash during Save leaves the previous checkpoint
//     loadable.
//   - Save assigns Seq, increasing by one per session, and refuses a
//     checkpoint that does not follow the session's latest one (see
//     ConflictError), so two writers cannot interleave silently.
//   - Within one generation, the messages of a later checkpoint extend those
//     of an earlier one; a Save that would break this is refused.
//   - Loading never panics and never returns a silently wrong checkpoint:
//     a head or message that cannot be decoded, or a head that names more
//     messages than are stored, is a *CorruptError; a head written by a
//     newer version of this package is a *VersionError; an unknown session
//     is a *NotFoundError, which matches ErrNotFound.
//
// The encoding is exported (EncodeHead, DecodeHead, EncodeMessage,
// DecodeMessage, Load) so that every Store shares it. Package sessiontest
// checks a Store against these rules.
//
// # Rewinding
//
// AtStep returns an earlier checkpoint. To continue a session from it, call
// Rewind, which starts a new generation so that the messages after the
// rewound step are written anew, and keeps the earlier checkpoints.
package session
