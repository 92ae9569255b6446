package merge

import "testing"

func TestDbgBlank(t *testing.T) {
	doc := "# T\n\n## A\n\ntext a\n\n## B\n\ntext b\n\n## Contributing code\n"
	t.Log(blankUsuallyFollows(doc))
	res, _ := Merge(Options{Format: "markdown"}, chunksOf(doc, "Sure, here is the continuation:\n\nPlease read.\n"))
	t.Logf("%q %+v", res.Content, res.Joins)
}
