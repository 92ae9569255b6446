//go:build !compare

package main

import "errors"

// compare needs the merge of the base commit in basemerge/, which only
// make merge-compare extracts; without it the command is not built, so a
// clean checkout still builds and vets.
func compare(cache, repo string) (int, error) {
	return 0, errors.New("compare is built with -tags compare after extracting basemerge/: run make merge-compare")
}
