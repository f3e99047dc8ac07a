// Package llm is the contract between the runtime and a language model: the
// [Model] interface and its optional extensions, the [Request] the runtime
// sends, the [Reply] and streamed [Delta]s a model returns, the [Usage] it
// reports, and the provider-neutral [ModelError].
//
// A provider adapter (such as providers/openai) imports this package and
// defs, never the runtime: it implements [Model], and [StreamingModel],
// [NativeOutputModel], [ModelNamer], [ProviderNamer] and [Redactor] when it
// can. The runtime (package runtime) consumes a Model; package snapshots
// scripts one for tests. The package imports only the standard library and
// defs.
//
// # Errors
//
// A model adapter returns a *[ModelError] for every failure it can
// describe: the HTTP status, whether sending the request again may succeed
// ([IsRetryable]), and whether the request was too long for the model's
// context window (the runtime then runs its recovery effects). A
// *[RequestError] is a request found malformed before it was sent.
package llm
