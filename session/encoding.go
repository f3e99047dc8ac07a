package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/reprompt/reprompt/defs"
	"github.com/reprompt/reprompt/effects"
	"github.com/reprompt/reprompt/session/internal/msgcodec"
)

// head is the stored form of a checkpoint without its messages. Fields are
// only ever added: a decoder ignores fields it does not know, and a change
// that an older decoder would misread needs a new Version.
type head struct {
	Version      int                        `json:"version"`
	SessionID    string                     `json:"session_id"`
	Seq          int64                      `json:"seq"`
	Incarnation  int64                      `json:"incarnation,omitempty"`
	Step         int                        `json:"step"`
	Generation   int                        `json:"generation"`
	Root         *int                       `json:"root,omitempty"`
	Messages     int                        `json:"messages"`
	State        json.RawMessage            `json:"state,omitempty"`
	Effects      json.RawMessage            `json:"effects"`
	SeenMessages []string                   `json:"seen_messages,omitempty"`
	Pending      *storedPending             `json:"pending,omitempty"`
	Stats        Stats                      `json:"stats"`
	Extra        map[string]json.RawMessage `json:"extra,omitempty"`
	Done         bool                       `json:"done,omitempty"`
	Record       *StepRecord                `json:"record,omitempty"`
	// RetiredCallIDs holds the retired call ids in a head that EncodeHead
	// writes; a head that Plan writes names how many there are
	// (RetiredStored), stored beside it (see Write.Retired).
	RetiredCallIDs []string `json:"retired_call_ids,omitempty"`
	RetiredStored  int      `json:"retired_stored,omitempty"`
}

// Head is a decoded checkpoint head: the checkpoint without its messages,
// how many messages it holds and the root of its generation's lineage.
type Head struct {
	// Checkpoint has every field but Transcript (and Base, which is 0).
	Checkpoint Checkpoint
	// Messages is the length of the checkpoint's transcript.
	Messages int
	// Root is the first generation of the checkpoint's lineage: the latest
	// generation at or before Checkpoint.Generation that was written in
	// full (with Base 0). Message idx of the transcript is the stored row
	// of index idx with the highest generation in [Root, Generation]. Heads
	// that do not record a root (all those written before Base existed)
	// have Root == Generation.
	Root int
	// RetiredStored is the number of the checkpoint's retired call ids
	// that are stored beside the head, as the chunks of its Root (see
	// Write.Retired), rather than in it; Checkpoint.RetiredCallIDs is nil
	// when it is above 0.
	RetiredStored int
}

// EncodeHead returns the stored form of cp without its messages, with
// version cp.FormatVersion(). It records len(cp.Transcript) as the number
// of messages, and cp.Generation as the root of its lineage (a head that
// Plan encodes for a checkpoint with Base > 0 records its lineage's root
// instead).
// It fails if State or a value of Extra is not valid JSON.
// The retired call ids are written in the head.
func EncodeHead(cp *Checkpoint) ([]byte, error) {
	return encodeHead(cp, cp.Generation, false)
}

// encodeHead is EncodeHead with the root of cp's lineage, recorded only
// when it is not cp.Generation so that heads without shared rows stay as
// version 1 wrote them. With stored set, the head names how many retired
// call ids cp has instead of holding them.
func encodeHead(cp *Checkpoint, root int, stored bool) ([]byte, error) {
	h := head{
		Version:      cp.FormatVersion(),
		SessionID:    cp.SessionID,
		Seq:          cp.Seq,
		Incarnation:  cp.Incarnation,
		Step:         cp.Step,
		Generation:   cp.Generation,
		Messages:     len(cp.Transcript),
		State:        cp.State,
		Effects:      cp.Effects,
		SeenMessages: cp.SeenMessages,
		Pending:      storePending(cp.Pending),
		Stats:        cp.Stats,
		Extra:        cp.Extra,
		Done:         cp.Done,
		Record:       cp.Record,
	}
	if stored {
		h.RetiredStored = len(cp.RetiredCallIDs)
	} else {
		h.RetiredCallIDs = cp.RetiredCallIDs
	}
	if root != cp.Generation {
		h.Root = &root
	}
	b, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("session %q: encode checkpoint: %w", cp.SessionID, err)
	}
	return b, nil
}

// DecodeHead decodes a head written by EncodeHead with any version from 1 to
// Version. Unknown fields are ignored. A version above Version is a
// *VersionError; anything else that is not a well-formed head (bad JSON, no
// version, a negative count, no session id) is an error that stores report
// as a *CorruptError.
func DecodeHead(data []byte) (*Head, error) {
	// The version is checked before the fields are: a head of a later
	// version that does not decode is a *VersionError. The head is decoded
	// once, with its version; only a head that does not decode is read
	// again, for its version and then for the error.
	var d struct {
		head
		Version *int `json:"version"` // shadows head.Version
	}
	err := json.Unmarshal(data, &d)
	if err != nil {
		var probe struct {
			Version *int `json:"version"`
		}
		if perr := json.Unmarshal(data, &probe); perr != nil {
			return nil, fmt.Errorf("head: %w", perr)
		}
		d.Version = probe.Version
	}
	switch {
	case d.Version == nil:
		return nil, errors.New("head: no version")
	case *d.Version > Version:
		return nil, &VersionError{Got: *d.Version, Max: Version}
	case *d.Version < 1:
		return nil, fmt.Errorf("head: invalid version %d", *d.Version)
	case err != nil:
		var h head
		err = json.Unmarshal(data, &h) // the error as decoding a head words it
		return nil, fmt.Errorf("head: %w", err)
	}
	h := d.head
	h.Version = *d.Version
	switch {
	case h.SessionID == "":
		return nil, errors.New("head: no session id")
	case h.Seq < 1:
		return nil, fmt.Errorf("head: invalid seq %d", h.Seq)
	case h.Step < 0:
		return nil, fmt.Errorf("head: invalid step %d", h.Step)
	case h.Generation < 0:
		return nil, fmt.Errorf("head: invalid generation %d", h.Generation)
	case h.Messages < 0:
		return nil, fmt.Errorf("head: invalid message count %d", h.Messages)
	case h.Root != nil && (*h.Root < 0 || *h.Root > h.Generation):
		return nil, fmt.Errorf("head: invalid root %d of generation %d", *h.Root, h.Generation)
	case h.RetiredStored < 0 || (h.RetiredStored > 0 && len(h.RetiredCallIDs) > 0):
		return nil, fmt.Errorf("head: invalid count of retired call ids %d (and %d in the head)", h.RetiredStored, len(h.RetiredCallIDs))
	}
	root := h.Generation
	if h.Root != nil {
		root = *h.Root
	}
	if h.State != nil && !json.Valid(h.State) {
		// Unreachable through json.Unmarshal, kept as a guard.
		return nil, errors.New("head: state is not JSON")
	}
	if bytes.Equal(h.State, []byte("null")) {
		h.State = nil
	}
	pending, err := h.Pending.load()
	if err != nil {
		return nil, fmt.Errorf("head: pending reply: %w", err)
	}
	if pending != nil && pending.Reply.Role != defs.RoleAssistant {
		return nil, fmt.Errorf("head: pending reply has role %q, want %q", pending.Reply.Role, defs.RoleAssistant)
	}
	if pending != nil {
		if err := pending.check(); err != nil {
			return nil, fmt.Errorf("head: pending reply: %w", err)
		}
	}
	if err := new(effects.Manager).Restore(h.Effects); err != nil {
		return nil, fmt.Errorf("head: %w", err)
	}
	return &Head{
		Checkpoint: Checkpoint{
			Version:        h.Version,
			SessionID:      h.SessionID,
			Seq:            h.Seq,
			Incarnation:    h.Incarnation,
			RetiredCallIDs: h.RetiredCallIDs,
			Step:           h.Step,
			Generation:     h.Generation,
			State:          h.State,
			Effects:        h.Effects,
			SeenMessages:   h.SeenMessages,
			Pending:        pending,
			Stats:          h.Stats,
			Extra:          h.Extra,
			Done:           h.Done,
			Record:         h.Record,
		},
		Messages:      h.Messages,
		Root:          root,
		RetiredStored: h.RetiredStored,
	}, nil
}

// EncodeMessage returns the stored form of one message: its JSON, with
// each tool call's arguments kept as received. Arguments that encoding/json
// would not give back byte for byte (not valid JSON, or JSON that it
// compacts or escapes) are also stored in a "raw_arguments" field, by the
// call's index; under "arguments" they appear as encoding/json writes them,
// or, when they are not JSON, as a JSON string, which is what a decoder
// that predates "raw_arguments" reads.
func EncodeMessage(m defs.Message) ([]byte, error) { return msgcodec.Encode(m) }

// DecodeMessage decodes a message written by EncodeMessage. Unknown fields
// are ignored; a message without a role is an error.
func DecodeMessage(data []byte) (defs.Message, error) { return msgcodec.Decode(data) }

// storedPending is the stored form of a Pending, with its reply's and
// results' arguments kept as received.
type storedPending struct {
	Reply     msgcodec.Message   `json:"reply"`
	Results   []msgcodec.Result  `json:"results,omitempty"`
	Offered   []string           `json:"offered"`
	Approvals []Approval         `json:"approvals,omitempty"`
	Finish    string             `json:"finish_reason,omitempty"`
	Sent      []msgcodec.Message `json:"sent,omitempty"`
}

func storePending(p *Pending) *storedPending {
	if p == nil {
		return nil
	}
	sp := &storedPending{Reply: msgcodec.Store(p.Reply), Results: msgcodec.StoreResults(p.Results), Offered: p.Offered, Approvals: p.Approvals, Finish: p.FinishReason}
	for _, m := range p.Sent {
		sp.Sent = append(sp.Sent, msgcodec.Store(m))
	}
	return sp
}

func (s *storedPending) load() (*Pending, error) {
	if s == nil {
		return nil, nil
	}
	reply, err := s.Reply.Load()
	if err != nil {
		return nil, err
	}
	p := &Pending{Reply: reply, Results: msgcodec.LoadResults(s.Results), Offered: s.Offered, Approvals: s.Approvals, FinishReason: s.Finish}
	for _, sm := range s.Sent {
		m, err := sm.Load()
		if err != nil {
			return nil, fmt.Errorf("pending sent message: %w", err)
		}
		p.Sent = append(p.Sent, m)
	}
	return p, nil
}

// Row is one stored message: its index in the transcript and its stored
// form.
type Row struct {
	Index int
	Data  []byte
}

// Load decodes a stored checkpoint. id and seq are what the store filed the
// head under; rows is called once, with the root and generation of the
// checkpoint's lineage and the length of its transcript, and returns, in
// index order, for each index below count, the stored row of that index
// with the highest generation in [root, generation] (an error it returns is
// returned as is). count is read from storage and may be damaged (10^15):
// rows must not allocate in proportion to it, only to the rows it finds.
// A store that keeps a row's generation can select them as
//
//	SELECT DISTINCT ON (idx) idx, data FROM messages
//	WHERE session = $id AND generation BETWEEN $root AND $generation AND idx < $count
//	ORDER BY idx, generation DESC
//
// A head or message that does not decode, a head filed under another id or
// seq, and fewer rows than the head names are reported as a *CorruptError;
// a head from a later version as a *VersionError.
//
// A head that Plan wrote for a checkpoint with retired call ids names
// them rather than holding them: Load reports it as a *CorruptError, and
// a store that keeps Write.Retired loads it with LoadRetired.
func Load(id string, seq int64, data []byte, rows func(root, generation, count int) ([]Row, error)) (*Checkpoint, error) {
	return LoadRetired(id, seq, data, rows, nil)
}

// LoadRetired is Load for a store that keeps the chunks of retired call
// ids that Plan returns (Write.Retired): when the head names stored ids,
// retired is called once, with the root of the checkpoint's lineage and
// the number of ids, and returns that root's chunks with a first index
// below count, in order of their first index (Row.Index is the chunk's
// first index, Row.Data its data); an error it returns is returned as is.
// Chunks that do not decode or do not make up count ids are reported as a
// *CorruptError.
func LoadRetired(id string, seq int64, data []byte, rows func(root, generation, count int) ([]Row, error), retired func(root, count int) ([]Row, error)) (*Checkpoint, error) {
	h, err := decodeFiled(id, seq, data)
	if err != nil {
		return nil, err
	}
	if h.RetiredStored > 0 {
		if retired == nil {
			return nil, &CorruptError{ID: id, Seq: seq, Err: fmt.Errorf("head names %d retired call ids stored beside it, which this reader does not read", h.RetiredStored)}
		}
		chunks, err := retired(h.Root, h.RetiredStored)
		if err != nil {
			return nil, err
		}
		if h.Checkpoint.RetiredCallIDs, err = joinRetired(chunks, h.RetiredStored); err != nil {
			return nil, &CorruptError{ID: id, Seq: seq, Err: err}
		}
	}
	rs, err := rows(h.Root, h.Checkpoint.Generation, h.Messages)
	if err != nil {
		return nil, err
	}
	return h.load(id, seq, rs, decodeRows)
}

// joinRetired returns the first count retired call ids of chunks, stored
// chunks in order of their first index.
func joinRetired(chunks []Row, count int) ([]string, error) {
	ids := make([]string, 0, min(count, 1024)) // count is read from storage
	for _, c := range chunks {
		if len(ids) >= count {
			break
		}
		if c.Index != len(ids) {
			return nil, fmt.Errorf("retired call ids %d to %d are missing", len(ids), c.Index)
		}
		var more []string
		if err := json.Unmarshal(c.Data, &more); err != nil {
			return nil, fmt.Errorf("retired call ids from %d: %w", c.Index, err)
		}
		if len(more) == 0 {
			return nil, fmt.Errorf("retired call ids from %d: an empty chunk", c.Index)
		}
		ids = append(ids, more...)
	}
	if len(ids) < count {
		return nil, fmt.Errorf("head names %d retired call ids, %d are stored", count, len(ids))
	}
	return ids[:count:count], nil
}

// decodeFiled decodes the head filed under session id and seq, as Load
// reports its errors.
func decodeFiled(id string, seq int64, data []byte) (*Head, error) {
	h, err := DecodeHead(data)
	if err != nil {
		if ve, ok := errors.AsType[*VersionError](err); ok {
			ve.ID, ve.Seq = id, seq
			return nil, ve
		}
		return nil, &CorruptError{ID: id, Seq: seq, Err: err}
	}
	if cp := &h.Checkpoint; cp.SessionID != id || cp.Seq != seq {
		return nil, &CorruptError{ID: id, Seq: seq, Err: fmt.Errorf("head of session %q seq %d filed as session %q seq %d", cp.SessionID, cp.Seq, id, seq)}
	}
	return h, nil
}

// load checks rs, the rows found for h in index order (see Load), and
// returns h's checkpoint with the transcript that transcript makes of
// them: rs holds exactly the rows of indexes 0 to h.Messages-1 when it is
// called. transcript returns the messages, or the index of the first row
// that does not decode and why.
func (h *Head) load(id string, seq int64, rs []Row, transcript func(rs []Row) ([]defs.Message, int, error)) (*Checkpoint, error) {
	corrupt := func(format string, args ...any) error {
		return &CorruptError{ID: id, Seq: seq, Err: fmt.Errorf(format, args...)}
	}
	cp := &h.Checkpoint
	if len(rs) > h.Messages {
		rs = rs[:h.Messages]
	}
	// Checked before allocating: the count comes from storage.
	for i, r := range rs {
		if r.Index != i {
			return nil, corrupt("message %d of generation %d is missing", i, cp.Generation)
		}
	}
	if len(rs) < h.Messages {
		return nil, corrupt("head names %d messages of generation %d, %d are stored", h.Messages, cp.Generation, len(rs))
	}
	tr, bad, err := transcript(rs)
	if err != nil {
		return nil, corrupt("message %d of generation %d: %w", bad, cp.Generation, err)
	}
	cp.Transcript = tr
	return cp, nil
}

// decodeRows decodes each of rs.
func decodeRows(rs []Row) ([]defs.Message, int, error) {
	tr := make([]defs.Message, len(rs))
	for i, r := range rs {
		var err error
		if tr[i], err = DecodeMessage(r.Data); err != nil {
			return nil, i, err
		}
	}
	return tr, 0, nil
}

// Tip is what a store keeps about a session's latest checkpoint to plan the
// next Save. The zero Tip stands for a session with no checkpoint.
type Tip struct {
	Seq        int64
	Generation int
	// Root is the root of the lineage of Generation (see Head.Root). A
	// store that kept no root for a tip (one saved before Base existed)
	// passes Generation.
	Root     int
	Messages int
	// Incarnation is the session's (see Checkpoint.Incarnation); 0 for a
	// session created before incarnations existed.
	Incarnation int64
	// Retired is the number of retired call ids stored for Root (see
	// Write.Retired).
	Retired int
}

// Write is what a store writes for one Save, as planned by Plan.
type Write struct {
	// Tip is the session's tip after the write.
	Tip Tip
	// Step, Done and Pending (whether cp.Pending is set) are the
	// checkpoint's, for the store's index.
	Step    int
	Done    bool
	Pending bool
	// Head is the encoded head, to file under (SessionID, Tip.Seq).
	Head []byte
	// First is the index of Messages[0] in the transcript; Messages are
	// the encoded messages not yet stored, to store as rows of generation
	// Tip.Generation with indexes First, First+1, …. The rows of that
	// generation below First, if any, are stored already; when it is a new
	// generation with a Base, its rows below First are those of the
	// earlier generations of its lineage (from Tip.Root), which the store
	// keeps.
	First    int
	Messages [][]byte
	// Retired, if not nil, is a chunk of retired call ids not yet stored
	// (a JSON array of strings), to store for lineage Tip.Root as the ids
	// from index RetiredFirst on, replacing any chunk of that root whose
	// first index is RetiredFirst or above. The root's chunks below
	// RetiredFirst are stored already. LoadRetired reads them.
	RetiredFirst int
	Retired      []byte
}

// Plan checks that cp may follow tip, the session's latest checkpoint, and
// encodes what Save must write: the head with the next Seq and the messages
// not stored yet: those past tip.Messages in the same generation, those from
// cp.Base on in a new generation. It does not modify cp. Its errors are
// *ConflictError and *InvalidError, a *CorruptError for a tip that no Save
// could have left (a negative count, a root above its generation), and
// encoding errors.
func Plan(cp *Checkpoint, tip Tip) (*Write, error) {
	invalid := func(format string, args ...any) error {
		return &InvalidError{ID: cp.SessionID, Reason: fmt.Sprintf(format, args...)}
	}
	if tip.Seq < 0 || tip.Generation < 0 || tip.Root < 0 || tip.Root > tip.Generation || tip.Messages < 0 || tip.Retired < 0 || (tip.Seq == 0 && tip != Tip{}) {
		return nil, &CorruptError{ID: cp.SessionID, Seq: tip.Seq, Err: fmt.Errorf("stored tip is damaged: seq %d, generation %d, root %d, %d messages, %d retired call ids", tip.Seq, tip.Generation, tip.Root, tip.Messages, tip.Retired)}
	}
	switch {
	case cp.SessionID == "":
		return nil, invalid("empty session id")
	case cp.Seq != tip.Seq:
		return nil, &ConflictError{ID: cp.SessionID, Seq: cp.Seq, Latest: tip.Seq}
	case tip.Seq != 0 && cp.Incarnation != tip.Incarnation:
		return nil, &ConflictError{ID: cp.SessionID, Seq: cp.Seq, Latest: tip.Seq, Recreated: true}
	case cp.Step < 0:
		return nil, invalid("negative step %d", cp.Step)
	case cp.Generation < tip.Generation:
		return nil, invalid("generation %d is lower than the latest checkpoint's (%d)", cp.Generation, tip.Generation)
	case cp.Generation == tip.Generation && len(cp.Transcript) < tip.Messages:
		return nil, invalid("transcript of %d messages is shorter than the latest checkpoint's (%d) in generation %d: a rewrite needs a new generation", len(cp.Transcript), tip.Messages, cp.Generation)
	case cp.Base < 0:
		return nil, invalid("negative base %d", cp.Base)
	case cp.Base > 0 && (tip.Seq == 0 || cp.Generation != tip.Generation+1):
		return nil, invalid("base %d in generation %d: a base is only valid in the generation after the latest checkpoint's (%d)", cp.Base, cp.Generation, tip.Generation)
	case cp.Base > len(cp.Transcript):
		return nil, invalid("base %d is beyond the transcript of %d messages", cp.Base, len(cp.Transcript))
	case cp.Base > tip.Messages:
		return nil, invalid("base %d is beyond the latest checkpoint's transcript of %d messages", cp.Base, tip.Messages)
	}
	if cp.Pending != nil && cp.Pending.Reply.Role != defs.RoleAssistant {
		return nil, invalid("pending reply has role %q, want %q", cp.Pending.Reply.Role, defs.RoleAssistant)
	}
	if cp.Pending != nil {
		if err := cp.Pending.check(); err != nil {
			return nil, invalid("pending reply: %v", err)
		}
	}
	// The rows written are those from first on; root is the first
	// generation of the lineage whose rows, with the higher generations up
	// to cp's, make up the transcript.
	first, root := 0, cp.Generation
	switch {
	case tip.Seq != 0 && cp.Generation == tip.Generation:
		first, root = tip.Messages, tip.Root
	case cp.Base > 0:
		first, root = cp.Base, tip.Root
	}
	// The retired call ids written are those past the ones stored for
	// the lineage, all of them in a new one.
	retiredFirst := 0
	if tip.Seq != 0 && root == tip.Root {
		if len(cp.RetiredCallIDs) < tip.Retired {
			return nil, invalid("%d retired call ids, fewer than the latest checkpoint's (%d) in the lineage of generation %d", len(cp.RetiredCallIDs), tip.Retired, root)
		}
		retiredFirst = tip.Retired
	}
	next := *cp
	next.Seq = tip.Seq + 1
	if tip.Seq == 0 {
		next.Incarnation = newIncarnation()
	}
	h, err := encodeHead(&next, root, true)
	if err != nil {
		return nil, err
	}
	w := &Write{
		Tip: Tip{Seq: next.Seq, Generation: cp.Generation, Root: root, Messages: len(cp.Transcript),
			Incarnation: next.Incarnation, Retired: len(cp.RetiredCallIDs)},
		Step:    cp.Step,
		Done:    cp.Done,
		Pending: cp.Pending != nil,
		Head:    h,
		First:   first,
	}
	if len(cp.RetiredCallIDs) > retiredFirst {
		w.RetiredFirst = retiredFirst
		if w.Retired, err = json.Marshal(cp.RetiredCallIDs[retiredFirst:]); err != nil {
			return nil, fmt.Errorf("session %q: retired call ids: %w", cp.SessionID, err)
		}
	}
	if n := len(cp.Transcript) - first; n > 0 {
		w.Messages = make([][]byte, n)
		for i, m := range cp.Transcript[first:] {
			if m.Role == "" {
				return nil, invalid("message %d has no role", first+i)
			}
			if w.Messages[i], err = EncodeMessage(m); err != nil {
				return nil, fmt.Errorf("session %q: message %d: %w", cp.SessionID, first+i, err)
			}
		}
	}
	return w, nil
}

// newIncarnation returns the incarnation of a session created anew: a
// random number other than 0, so that two sessions created under one id
// have the same only by a chance of 2^-63.
func newIncarnation() int64 {
	for {
		if n := rand.Int64(); n != 0 {
			return n
		}
	}
}
