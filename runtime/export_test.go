package runtime

// ScriptMessages builds a conversation from a script of tokens, for the
// fuzz tests of validation in both test packages (see scriptMessages).
var ScriptMessages = scriptMessages
