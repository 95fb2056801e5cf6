package views

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// In templ, braces right after a component call are its children: in
// `@Time(t){ post(...) }` the text after the time goes to Time, which
// drops it ("from 6 Dec, 02:486 Dec, 03:48" with no "to"). A call meant to
// be followed by text has the text in an element of its own.
func TestNoTextSwallowedAsChildren(t *testing.T) {
	files, _ := filepath.Glob("*.templ")
	call := regexp.MustCompile(`@([A-Za-z][\w.]*)\([^{}\n]*\)\{ [^}\n]*\}`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range call.FindAll(b, -1) {
			t.Errorf("%s: %s: the braces are the call's children, not text after it", f, m)
		}
	}
}
