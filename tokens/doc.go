// Package tokens counts the tokens of a transcript offline, exactly where the
// model's tokenizer is known and by a calibrated estimate where it is not.
//
// # Counters
//
// A [Counter] counts text, messages and tool schemas under one tokenizer.
// [ForModel] picks one from a model name: o200k_base for the gpt-4o, gpt-4.1,
// gpt-4.5, gpt-5, gpt-oss and o1/o3/o4 families, cl100k_base for gpt-4,
// gpt-3.5-turbo and the text-embedding-3 and ada-002 embeddings, and an
// [Estimator] (about four characters a token, rounded up) for every other
// model (llama, qwen, mistral, claude, ...). [Counter.Exact] tells which.
// The encodings are embedded in the binary (no network) and loaded once, on
// first use, then shared by every Counter of that encoding.
//
// # Framing
//
// Chat APIs wrap each message in a few tokens of framing. The rules used
// here are those of OpenAI's published counting recipe, extended to tool
// calls and tool schemas:
//
//   - a message costs [MessageOverhead] tokens, plus its role, plus its
//     content, plus, when it has a name, the name and [NameOverhead];
//   - each tool call of an assistant message costs [ToolCallOverhead] plus
//     its ID, its name and its arguments;
//   - a tool result's ToolCallID is counted as text (with the content);
//   - a message's Reasoning and Meta are never sent back to a model and are
//     not counted;
//   - a tool schema costs [ToolOverhead] plus its name, its description and
//     its parameters as compact JSON; a non-empty tool list costs
//     [ToolsOverhead] once;
//   - every request costs [ReplyPriming] once, for the start of the reply.
//
// Counts of tool calls and schemas are conservative: providers render
// schemas more compactly than JSON.
//
// # Incremental accounting
//
// An [Accountant] counts a transcript step after step and does work only for
// what is new: per-message counts are kept with prefix sums, append-only
// growth of the same slice is detected by its first element's address, and a
// rewritten transcript (compaction) reuses the counts of unchanged messages
// from a bounded content-keyed cache. Its Count method has the signature of
// effects.Budget.Count. [Accountant.Tools] counts a tool list once per change.
//
// # Hybrid estimate
//
// For models without a known tokenizer, a [Hybrid] anchors the estimate to
// the usage the provider reported for the last request and calibrates the
// estimate of newer messages by the ratio of reported to estimated tokens.
//
// # Use in a runtime
//
// One Accountant per run (it remembers that run's transcript), made from
// ForModel(model). effects.Budget.Count is its Count and Budget.Fixed the
// Counter's count of the system prompt (as a system message) plus Tools of
// the request's tool list plus ReplyPriming. When the Counter is not exact,
// use a Hybrid instead: Count is its Estimate, Fixed is Scale of the same
// sum, and each reply's usage goes to Observe with the request it answered.
//
// # Example
//
//	c := tokens.ForModel("gpt-4o")
//	acc := tokens.NewAccountant(c)
//	budget := effects.Budget{Window: 128000, Count: acc.Count}
//	n := acc.Count(transcript)        // counts everything once
//	transcript = append(transcript, reply, result)
//	n = acc.Count(transcript)         // counts only reply and result
//	shared := acc.Prefix(k)           // tokens of the first k messages
package tokens
