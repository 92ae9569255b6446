// Package simulator is an OpenAI-compatible model simulator: the project's
// only test double. It speaks the real Responses API (POST /v1/responses,
// with previous_response_id and SSE streaming; GET /v1/responses/{id}) and
// Chat Completions (POST /v1/chat/completions, history and vLLM-style
// continue_final_message) so tests and demos drive it through openai-go
// exactly as production drives OpenAI.
//
// A directive anywhere in the instructions or the first user input chooses
// the document and the misbehaviour:
//
//	[[sim format=csv size=5000 seed=3 tag=job-42 faults=429@1:2,500@2x2 reasoning=0 behavior=exact]]
//
// format is csv, json, jsonl, markdown, code, diff or text; size is the
// approximate document size in bytes; seed varies the content; tag groups
// calls for [Server.Calls]. faults is a comma-separated list of
// KIND@DEPTH[:ARG][xN]: the fault fires on the first N (default 1) requests
// at that depth (0 = first request, 1 = first continuation ...) of a
// conversation, identified by its directive, so the retry succeeds. Kinds:
// 429 (ARG = Retry-After seconds), 500, 400, content_filter, failed,
// slow (ARG = delay, e.g. 3s), malformed (truncated body), cutoff
// (incomplete, reason "interrupted"). reasoning is the reasoning tokens spent
// per call (default 64 for o1/o3/o4/gpt-5 models, else 0). behavior is how a
// continuation misbehaves: exact, repeat_tail, restart_line, preamble,
// fence or overlap.
//
// A token is up to 4 bytes of the document, never splitting a rune, so
// max_output_tokens cuts land anywhere. [Document] and [DocumentFor] give the
// exact full document a conversation reassembles to.
package simulator
