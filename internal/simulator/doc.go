// Package simulator is an OpenAI-compatible model simulator: the project's
// only test double. It speaks the real Responses API (POST /v1/responses,
// with previous_response_id, SSE streaming and background mode; GET
// /v1/responses/{id}, streamed with ?stream=true&starting_after=N; POST
// /v1/responses/{id}/cancel) and Chat Completions (POST
// /v1/chat/completions, history, vLLM-style continue_final_message and SSE
// streaming) so tests and demos drive it through openai-go exactly as
// production drives OpenAI.
//
// A directive anywhere in the instructions or the first user input chooses
// the document and the misbehaviour:
//
//	[[sim format=csv size=5000 seed=3 tag=job-42 faults=429@1:2,500@2x2 reasoning=0 behavior=exact tool=2:ok]]
//
// format is csv, json, jsonl, markdown, code, diff or text; size is the
// approximate document size in bytes; seed varies the content; tag groups
// calls for [Server.Calls].
//
// faults is a comma-separated list of KIND@DEPTH[:ARG][xN]: the fault fires
// on the first N (default 1) requests at that depth (0 = first request, 1 =
// first continuation ...) of a conversation, identified by its directive, so
// the retry succeeds. Kinds: 429 (ARG = Retry-After seconds), 500, 400,
// content_filter, failed, slow (ARG = delay, e.g. 3s), malformed (a 200 whose
// body is cut in half; a stream ends cleanly midway, without a terminal
// event), cutoff and break. cutoff is in-band: the server says it stopped
// (Responses status incomplete, reason "interrupted"; Chat finish_reason
// null) after half the budget. break is in transit: the connection is cut.
// A stream (either API) sends about half the turn's text and the connection
// then closes abruptly, without a finish_reason, terminal event or [DONE],
// so the client's read fails (unexpected EOF); a non-streaming request has
// its connection dropped before any reply. A broken Responses reply is not
// stored, although its id was sent in response.created: the client continues
// from the previous response and sends the text that reached it back as an
// assistant input item (see below).
//
// reasoning is the reasoning tokens spent per call (default 64 for
// o1/o3/o4/gpt-5 models, else 0); they count inside the output tokens, and
// when they use the whole max tokens the reply has no text (the same request
// with a higher max tokens then has some).
//
// behavior is how a continuation (depth >= 1) misbehaves: exact, repeat_tail
// (repeats the last 40 bytes), restart_line (restarts the incomplete last
// line), preamble ("Sure, here is the continuation:"), fence (opens the
// chunk with a ``` line; only the turn that finishes the document closes
// it, with a ``` line after the document's last line: a turn cut by max
// tokens never got to write a closing fence, and a turn whose budget would
// run out inside it is cut before the document's end), overlap (repeats the
// last 3 lines between ---BEGIN_OVERLAP--- and ---END_OVERLAP--- lines),
// ignore_overlap (see below), or one of the habits below. The repeated
// tail starts wherever the 40 bytes do, mid-word too (widened to a whole
// rune), as a tokenizer's token may start mid-word. What a behaviour adds is written text: it counts
// against max tokens like the document, and a budget too small for it
// writes part of it and none of the document. A model that restarts a line
// (or echoes lines) longer than its budget never progresses, as a real one
// would not: [Stalls] tells which conversations do.
//
// Four behaviours are habits of chat models that a merge has to meet
// whatever it was tuned on. wrap fences the whole answer, as models do with
// typed output: the turn that starts the document opens it with a
// "```TAG" line (TAG csv, json, diff; for jsonl json or jsonl and for
// markdown md or markdown, by the seed's parity, as models use both; go for
// code, the language of the generated code), continuations go on without a
// fence, and the turn that finishes the document closes it with a "```"
// line; a text answer is never fenced. A single-chunk answer is fenced too.
// wrap_each also reopens the fence at the start of every continuation (each
// cut off before its close). chatty opens every continuation with a remark
// ("Sure! Here's the rest:", "Below is what was left.", "(continued)" ...:
// fourteen, ending in a colon, a full stop, an exclamation mark or
// bracketed), followed by a blank line or a line break alone, and ends the
// answer with a closing remark ("I hope this helps!" ...) after one blank
// line or two; which ones is a pure function of the seed and the depth.
// restart_top starts the document over at a continuation, reproducing it
// from its start up to the cut before going on; when that would take more
// than half the turn's budget it starts instead at the earliest line that
// fits in half (not even the line cut off: nothing is repeated), so the
// conversation always progresses. Under a constant max tokens the first
// turn fills the budget, so the restart from the very start shows only
// when a continuation's budget is more than twice what was written.
// All of it is written text, counted as above. What comes after the
// document (the closing fence, the closing remark) is written only by the
// turn that finishes the document, and a turn whose budget would run out
// inside it stops short of the document's end instead, as the fence
// behaviour's close does. A prefilled continuation opens nothing but
// still closes the answer; a model held to a strict json_schema writes
// JSON only, with none of these.
//
// The overlap instruction: when the latest user turn of a continuation
// contains "repeat the last N lines" (any case), behaviours exact and
// overlap obey it: they write "---BEGIN_OVERLAP---\n", the last N lines
// emitted so far (the last one possibly partial, followed by "\n" if it has
// none), "---END_OVERLAP---\n", and then continue the document exactly.
// ignore_overlap ignores it: no markers, it restarts the incomplete last line
// as restart_line does (with or without the instruction). The other
// behaviours keep their own misbehaviour.
//
// tool=DEPTH[:MODE] makes the model call a function at that depth: the first
// function tool of the request's tools (Responses {"type":"function",
// "name":...}; Chat {"type":"function","function":{"name":...}}). A request
// that offers none gets no call. The model writes document text with part of
// the budget, then the call, with deterministic arguments of about 40
// tokens: {"query":"<words>","page":<DEPTH+1>}. MODE ok (the default): the
// call is complete (Responses status completed, a function_call output item
// with status completed; Chat finish_reason "tool_calls" and
// message.tool_calls); a max tokens too small for the arguments cuts them as
// truncated does. truncated: the budget runs out inside the arguments
// (Responses status incomplete, reason max_output_tokens, the function_call
// item incomplete; Chat finish_reason "length"), arguments cut. invalid: a
// complete call whose arguments are not JSON (a trailing comma).
//
// Continuing: a Responses continuation starts where its previous_response_id
// ended; a chat request where its assistant messages, read in order, leave
// the document. Assistant input items in a Responses request carry it
// further the same way, with or without previous_response_id (a first
// request whose input ends with an assistant message continues it). An
// assistant turn is matched against the document with the extras a
// behaviour adds recognized and skipped (an overlap block, a preamble,
// fences, tagged or not, chatty remarks, a repeated tail or line); a turn
// that leaves the document stops the matching there. A turn that starts
// the document over from an earlier line is followed only under
// restart_top: under another behaviour it is a restart for a strict schema.
// Depth counts one per assistant turn (chat) or per previous response and
// assistant item (Responses).
//
// Prefill: Chat's continue_final_message true continues a final assistant
// message in place, without any behaviour's extras before the text (the
// end of a whole answer still ends it: wrap's closing fence, chatty's
// closing remark) (vLLM's spelling; with
// vLLM add_generation_prompt must be false, and the simulator refuses an
// explicit true with vLLM's error). Other servers' prefill fields are not
// recognized: without continue_final_message a final assistant message is a
// finished turn that the model answers as a continuation.
//
// Structured outputs: Responses text.format and Chat response_format accept
// text, json_object and json_schema (name and schema required). A
// continuation (depth >= 1) that carries a strict json_schema makes the model
// start a new document from the beginning, as a real model constrained to
// the schema's root does; continuations must drop the format.
//
// Usage: a token is up to 4 bytes of the document, never splitting a rune,
// so max tokens cuts land anywhere. Input tokens count everything the model
// reads: Responses instructions, tools, input and the stored conversation;
// Chat every message (history is re-sent every time) and tools. Cached
// tokens are the part seen before, in whole 16-token blocks as a prefix
// cache serves it (Responses: the stored conversation plus instructions and
// tools; Chat: the messages before the latest assistant turn, which was
// never part of a prompt).
//
// Background mode: a Responses create with "background": true (and store
// true or unset: store false is refused, param "background") is answered at
// once, without the latency, with the response queued: its id, background
// true, no output, null usage. Its answer is decided then, exactly as a
// synchronous call's (directive, content faults, continuation), and
// withheld until it ends: it is queued for a tenth of the latency (at most
// 500ms), in_progress until the latency (plus a slow fault's delay) has
// passed since its creation, and then completed, incomplete or failed as
// the synchronous call would be, with completed_at set (times are Unix
// seconds to the millisecond; completed_at minus created_at is never less
// than the time it took). No goroutine or timer runs per response: its
// state is read off the clock ([Config.Now], so a test can move time on)
// whenever it is asked for. GET /v1/responses/{id} polls it at once (no
// latency). GET ...?stream=true&starting_after=N streams its events after
// sequence number N (all when N is absent): response.created and
// response.queued, response.in_progress, the output events of a
// synchronous stream and the terminal event, each sent when it is due, the
// text spread over the generation (reasoning tokens first); only a
// response created with stream true can be streamed again (others: 400),
// and a create with stream true streams the same events from the start.
// POST /v1/responses/{id}/cancel cancels a queued or in_progress response:
// status cancelled, the output its stream had carried, the input tokens in
// full and the output tokens in proportion to the generation time gone by;
// a cancel of an ended response returns it unchanged; a response that is
// not a background one cannot be cancelled (400). A cancelled response's
// stream ends after the events before the cancel, with no terminal event,
// and a continuation of it goes on from the text it wrote. A continuation
// of a background response that has not ended is refused (400). A
// background response is forgotten [Config.BackgroundRetention] (default 10
// minutes) after it ended: GET, stream and cancel then answer 404 as for an
// unknown id. HTTP faults (429, 500, 400) answer the create itself and
// create nothing; malformed and break spoil only the create's reply (a
// stream cut after half the text; an unstreamed create's connection
// dropped unanswered): the response is created and runs to its end, and a
// GET stream resumes it. [Server.BackgroundStats], also served as JSON at
// GET /sim/stats (no key, not under /v1), counts creates, polls, stream
// resumes, cancels, 404s for expiry and the responses in flight;
// [Server.HoldCreates] holds new creates back, for a test that must know
// every response created has been answered.
//
// [Server.Calls] logs each call with what the client asked (stream, max
// tokens, format, strict schema, background, the latest user turn's text)
// and what the model did (outcome, tool call): a background response is
// logged once, at its creation, with the outcome decided then. [Document] and [DocumentFor] give the exact
// full document a conversation reassembles to.
package simulator
