import { describe, expect, it } from "vitest";
import { escapeHtml, renderGroupsReport } from "../../../src/cli/html-report";

describe("HTML report", () => {
  const evil = "</pre><script>alert('x')</script><img src=x onerror=alert(1)>";
  const html = renderGroupsReport(
    [
      {
        tokens: [[1, 2, 3]],
        masks: [[-100, 2, 3]],
        scores: [1],
        inference_logprobs: [[0, -0.5, -0.25]],
        messages: [[{ role: "assistant", content: evil }]],
      },
    ],
    { title: "<b>title</b>", decodeToken: (id) => (id === 2 ? "<script>" : `t${id}`) },
  );

  it("never emits model output as markup", () => {
    expect(html).not.toContain("<script");
    expect(html).not.toContain("<img");
    expect(html).toContain("&lt;/pre&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;");
    expect(html).toContain("&lt;script&gt;</span>");
    expect(html).toContain("<title>&lt;b&gt;title&lt;/b&gt;</title>");
  });

  it("shows masks and logprobs per token and forbids scripts by CSP", () => {
    expect(html).toContain('class="pr" title="id 1 · mask -100 · logprob 0.000"');
    expect(html).toContain('class="tr" title="id 3 · mask 3 · logprob -0.250"');
    expect(html).toContain("default-src 'none'");
  });

  it("escapes every HTML-significant character", () => {
    expect(escapeHtml(`&<>"'`)).toBe("&amp;&lt;&gt;&quot;&#39;");
  });

  it("shows a tool rollout turn by turn: each call as name(k=v) with its result under it", () => {
    const report = renderGroupsReport(
      [
        {
          tokens: [[1]],
          masks: [[1]],
          scores: [1],
          messages: [
            [
              { role: "user", content: "Guess my number (1-100)." },
              {
                role: "assistant",
                content: "Let me try.",
                tool_calls: [
                  {
                    id: "call_1",
                    type: "function",
                    function: { name: "guess", arguments: '{"n":32}' },
                  },
                ],
              },
              { role: "tool", tool_call_id: "call_1", name: "guess", content: "higher" },
              {
                role: "assistant",
                content: '<tool_call>{"name": "guess", "arguments": {"n": 48}}</tool_call>',
              },
              { role: "tool", name: "guess", content: "correct <3" },
              {
                role: "assistant",
                content: null,
                tool_calls: [
                  {
                    id: "call_2",
                    type: "function",
                    function: { name: "guess", arguments: '{"n":48}' },
                  },
                ],
              },
              { role: "tool", tool_call_id: "call_2", name: "guess", content: "correct" },
              { role: "assistant", content: "It is 48." },
            ],
          ],
        },
      ],
      { title: "tools" },
    );
    expect(report).toContain(
      '<b>assistant · turn 1</b><pre>Let me try.</pre><div class="call"><code>guess(n=32)</code><pre>→ higher</pre></div>',
    );
    // A Hermes block in the text is read as a call, its markup not repeated as text.
    expect(report).toContain(
      '<b>assistant · turn 2</b><div class="call"><code>guess(n=48)</code><pre>→ correct &lt;3</pre></div>',
    );
    // A reply that is only a call (content null) shows the call and no text.
    expect(report).toContain(
      '<b>assistant · turn 3</b><div class="call"><code>guess(n=48)</code><pre>→ correct</pre></div>',
    );
    expect(report).toContain("<b>assistant · turn 4</b><pre>It is 48.</pre>");
    // The answered tool messages are shown under their calls only.
    expect(report).not.toContain('<div class="msg tool">');
    expect(report).not.toContain("&quot;arguments&quot;");
  });
});
