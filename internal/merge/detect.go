package merge

// Detect placeholder replaced below.
func Detect(hint string, chunks []Chunk) Detection { return Detection{Format: "text", Confidence: 0.5} }
