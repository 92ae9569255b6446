package merge

import (
	"fmt"
	"testing"
)

func TestZZ3(t *testing.T) {
	doc := "package p\n\n// Foo does a thing.\nfunc Foo() {\n\treturn\n}\n"
	for i := 0; i < 5; i++ {
		doc += doc
	}
	f := newFormat("code", Options{})
	f.observe(doc, 0)
	tr := f.traits()
	c := envCtx{site: f.site(doc), syntax: tr.syntax}
	for _, l := range []string{"Hope that's what you were looking for.", "**Done.**", "The code should now parse without errors!"} {
		r, ok := judgeTrailer([]string{l}, false, true, c)
		fmt.Println(l, ok, r.score, r.evidence)
	}
}
