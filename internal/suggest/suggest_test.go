package suggest

import "testing"

func TestClosest(t *testing.T) {
	t.Parallel()
	names := []string{"status", "result", "cancel", "wait", "remerge", "resume", "api", "apikey", "migrate"}
	tests := []struct{ word, want string }{
		{"statsu", "status"},
		{"stauts", "status"},
		{"apii", "api"},
		{"apikye", "apikey"},
		{"resme", "resume"},
		{"migrat", "migrate"},
		{"status", "status"},
		{"hello", ""},
		{"Write", ""},
	}
	for _, tt := range tests {
		if got := Closest(tt.word, names); got != tt.want {
			t.Errorf("Closest(%q) = %q, want %q", tt.word, got, tt.want)
		}
	}
}
