package simulator

// DirectiveHelp is a reference of the [[sim ...]] directive for command-line
// help; the package documentation has the details.
const DirectiveHelp = `A directive anywhere in the instructions or the first user input chooses the
document and the misbehaviour:

  [[sim format=csv size=5000 seed=3 tag=job-42 faults=429@1:2,500@2x2 reasoning=0 behavior=exact tool=2:ok]]

  format=csv|json|jsonl|markdown|code|diff|text   the document (default text)
  size=BYTES                                      approximate size (default 2000)
  seed=N                                          varies the content (default 1)
  tag=NAME                                        groups calls in the call log
  reasoning=N        reasoning tokens per call, inside output tokens
                     (default 64 for o1/o3/o4/gpt-5 models, else 0)
  behavior=B         how a continuation (depth >= 1) misbehaves:
    exact            continues exactly
    repeat_tail      repeats the last 40 bytes first (mid-word too)
    restart_line     restarts the incomplete last line
    preamble         "Sure, here is the continuation:" first
    fence            opens the chunk with a ` + "```" + ` line; only the turn that
                     finishes the document closes it (a ` + "```" + ` line)
    overlap          repeats the last 3 lines between ---BEGIN_OVERLAP--- and
                     ---END_OVERLAP--- lines
    ignore_overlap   ignores an overlap instruction: restarts the last line
    wrap             fences the whole answer: the turn that starts the document
                     opens a ` + "```" + `TAG line (csv, json, json or jsonl for
                     jsonl, go for code, diff, md or markdown), the turn that
                     finishes it closes it; text is never fenced
    wrap_each        as wrap, and every continuation reopens the fence
    chatty           a remark opens every continuation ("Sure! Here's the
                     rest:", "Below is what was left.", "(continued)", ...; by
                     seed and depth), another ends the answer ("I hope this
                     helps!", ...) after a blank line or two
    restart_top      starts the document over and reproduces it up to the cut,
                     or, when that takes more than half max tokens, from the
                     earliest line that fits in half (none: nothing repeated)
  tool=DEPTH[:MODE]  at DEPTH, text then a call of the request's first function
                     tool (none offered, no call); arguments ~40 tokens
    ok               complete call (default): Responses completed + function_call
                     item; Chat finish_reason tool_calls
    truncated        budget runs out inside the arguments: Responses incomplete
                     (max_output_tokens), item incomplete; Chat length
    invalid          complete call, arguments not valid JSON
  faults=KIND@DEPTH[:ARG][xN],...   fires on the first N requests at DEPTH
    429[:SECONDS] 500 400           HTTP errors (429 with Retry-After)
    content_filter                  incomplete / finish_reason content_filter
    failed                          Responses status failed; Chat 500
    slow:DURATION                   delays the reply
    malformed                       200 with half a body; a stream ends cleanly
                                    midway, no terminal event
    cutoff                          in-band: incomplete "interrupted" (Chat:
                                    finish_reason null) after half the budget
    break                           connection cut: a stream (either API) sends
                                    about half the text then closes abruptly (no
                                    finish_reason, terminal event or [DONE]); a
                                    non-streaming request is dropped unanswered

A continuation whose latest user turn says "repeat the last N lines" gets, with
behaviors exact and overlap, ---BEGIN_OVERLAP--- + the last N lines +
---END_OVERLAP--- and then the document. Everything written counts against max
tokens: a line (for overlap, three) longer than max tokens makes restart_line,
ignore_overlap and overlap repeat it forever. What a behavior writes after the
document (a closing fence, chatty's closing remark) is written only by a turn
with room for it; one without stops short of the document's end. Assistant messages (chat) and
assistant input items (Responses) carry the document further: the model
continues after the last one. Chat prefill is
vLLM's continue_final_message (add_generation_prompt false). A continuation
carrying a strict json_schema format restarts the document. Cached tokens: the
prompt prefix seen before, in 16-token blocks.

Background mode (Responses "background": true; store false is refused): the
create answers at once, queued; the response is queued for latency/10 (at most
500ms), in_progress until the latency (plus a slow fault's delay) has passed,
then ends as a synchronous call would. GET /v1/responses/{id} polls it without
the latency; ?stream=true&starting_after=N streams its events after N, each
when due (only if created with stream true); POST /v1/responses/{id}/cancel
cancels it (input billed in full, output in proportion to the time gone by).
It is forgotten (404) --background-retention after it ended. 429/500/400
faults answer the create; malformed and break spoil only the create's reply,
not the response. GET /sim/stats: background counters as JSON.
`
