package temporal

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/reprompt/reprompt/runtime"
	"github.com/reprompt/reprompt/session"
)

// A refused decision crosses Temporal as an application error and comes
// back, through the failure converter as on the wire, as the
// *runtime.ApprovalError it was; other errors are left alone.
func TestApprovalErrorRoundTrip(t *testing.T) {
	fc := temporal.GetDefaultFailureConverter()
	for _, want := range []*runtime.ApprovalError{
		{Op: "approve", CallID: "c9", Awaiting: []string{"c1", "c2"}, Err: runtime.ErrUnknownCall},
		{Op: "deny", CallID: "c1", Decided: session.Approved, Err: runtime.ErrAlreadyDecided},
		{Op: "approve", CallID: "c1", Err: runtime.ErrDone},
	} {
		sent := approvalFailure(want)
		require.Equal(t, want.Error(), sent.(*temporal.ApplicationError).Message())
		got := approvalErrorOf(fc.FailureToError(fc.ErrorToFailure(sent)))
		require.Equal(t, want, got)
		require.ErrorIs(t, got, want.Err)
	}
	other := errors.New("boom")
	require.Same(t, other, approvalFailure(other))
	require.Nil(t, approvalErrorOf(other))
	require.Nil(t, approvalErrorOf(temporal.NewApplicationError("x", ApprovalErrorType)), "no details")
}
