package worker

import (
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path"
	"runtime/debug"
	"strconv"
	"strings"
)

// MemoryLimitShare is the part of the container's memory limit the worker
// gives the Go runtime as its soft limit (GOMEMLIMIT): the collector works
// harder as the heap nears it, leaving a tenth for what the runtime does not
// count (stacks of cgo, the kernel's page cache of the process) before the
// kernel's OOM killer would act.
const MemoryLimitShare = 0.9

// ApplyMemoryLimit sets the Go runtime's soft memory limit as setting says:
// "auto" (or "") sets MemoryLimitShare of the container's limit (cgroup v2
// memory.max, or v1 memory.limit_in_bytes) unless GOMEMLIMIT is set in the
// environment, which the runtime has applied already; "off" leaves the
// runtime's default; a size ("1536MiB", "2GiB", "1000000000") sets that
// exactly, whatever GOMEMLIMIT says. It logs what was chosen, and returns
// the limit in force (math.MaxInt64 for none).
func ApplyMemoryLimit(setting string, log *slog.Logger) (int64, error) {
	return applyMemoryLimit(setting, os.Getenv("GOMEMLIMIT"), os.DirFS("/"), log)
}

func applyMemoryLimit(setting, envLimit string, root fs.FS, log *slog.Logger) (int64, error) {
	current := debug.SetMemoryLimit(-1)
	switch s := strings.TrimSpace(setting); s {
	case "off":
		log.Info("memory limit: the Go runtime's own (--memory-limit off)", "gomemlimit", envLimit)
		return current, nil
	case "", "auto":
		if envLimit != "" {
			log.Info("memory limit: GOMEMLIMIT from the environment", "bytes", current, "gomemlimit", envLimit)
			return current, nil
		}
		limit, source, ok := cgroupMemoryLimit(root)
		if !ok {
			log.Info("memory limit: none (no container memory limit found; set --memory-limit or GOMEMLIMIT)")
			return current, nil
		}
		soft := int64(float64(limit) * MemoryLimitShare)
		debug.SetMemoryLimit(soft)
		log.Info("memory limit: set from the container's", "bytes", soft, "container_bytes", limit, "share", MemoryLimitShare, "source", source)
		return soft, nil
	default:
		n, err := ParseBytes(s)
		if err != nil {
			return current, fmt.Errorf("memory-limit: %w", err)
		}
		debug.SetMemoryLimit(n)
		log.Info("memory limit: set by --memory-limit", "bytes", n)
		return n, nil
	}
}

// cgroupMemoryLimit is the memory limit of the cgroup the process is in:
// cgroup v2's memory.max along the process's cgroup path (the smallest of it
// and its ancestors'), else cgroup v1's memory.limit_in_bytes. ok is false
// when there is none ("max", or v1's near-2^63 for unlimited).
func cgroupMemoryLimit(root fs.FS) (limit int64, source string, ok bool) {
	const v2 = "sys/fs/cgroup"
	dir := v2
	if b, err := fs.ReadFile(root, "proc/self/cgroup"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if p, found := strings.CutPrefix(line, "0::"); found {
				dir = path.Join(v2, strings.TrimSpace(p))
			}
		}
	}
	limit = math.MaxInt64
	for d := dir; ; d = path.Dir(d) {
		if n, found := readLimit(root, path.Join(d, "memory.max")); found && n < limit {
			limit, source, ok = n, "/"+path.Join(d, "memory.max"), true
		}
		if d == v2 || !strings.HasPrefix(d, v2) {
			break
		}
	}
	if ok {
		return limit, source, true
	}
	const v1 = "sys/fs/cgroup/memory/memory.limit_in_bytes"
	if n, found := readLimit(root, v1); found && n < 1<<62 {
		return n, "/" + v1, true
	}
	return 0, "", false
}

// readLimit reads a cgroup limit file: a number of bytes, or "max".
func readLimit(root fs.FS, name string) (int64, bool) {
	b, err := fs.ReadFile(root, name)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil && n > 0
}

// ParseBytes reads a size as GOMEMLIMIT writes it: a number of bytes with
// an optional unit B, KiB, MiB, GiB or TiB.
func ParseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		mul    int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}
	num, mul := s, int64(1)
	for _, u := range units {
		if n, found := strings.CutSuffix(s, u.suffix); found {
			num, mul = strings.TrimSpace(n), u.mul
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/mul {
		return 0, fmt.Errorf("%q is not a size: want off, auto, or bytes with an optional unit (B, KiB, MiB, GiB, TiB), like 1536MiB", s)
	}
	return n * mul, nil
}
