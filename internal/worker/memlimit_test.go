package worker

import (
	"bytes"
	"log/slog"
	"math"
	"runtime/debug"
	"strings"
	"testing"
	"testing/fstest"
)

// The container's memory limit is read from cgroup v2 (the smallest along
// the process's cgroup path) or v1; "max" and v1's unlimited are none.
func TestCgroupMemoryLimit(t *testing.T) {
	cases := []struct {
		name   string
		files  map[string]string
		limit  int64
		source string
	}{
		{"v2 root", map[string]string{"sys/fs/cgroup/memory.max": "1073741824\n"}, 1 << 30, "/sys/fs/cgroup/memory.max"},
		{"v2 nested, parent smaller", map[string]string{"proc/self/cgroup": "0::/kubepods/pod1\n",
			"sys/fs/cgroup/kubepods/pod1/memory.max": "max\n", "sys/fs/cgroup/kubepods/memory.max": "536870912\n"},
			512 << 20, "/sys/fs/cgroup/kubepods/memory.max"},
		{"v2 unlimited", map[string]string{"sys/fs/cgroup/memory.max": "max\n"}, 0, ""},
		{"v1", map[string]string{"sys/fs/cgroup/memory/memory.limit_in_bytes": "268435456\n"}, 256 << 20, "/sys/fs/cgroup/memory/memory.limit_in_bytes"},
		{"v1 unlimited", map[string]string{"sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"}, 0, ""},
		{"none", map[string]string{}, 0, ""},
	}
	for _, c := range cases {
		fsys := fstest.MapFS{}
		for name, data := range c.files {
			fsys[name] = &fstest.MapFile{Data: []byte(data)}
		}
		limit, source, ok := cgroupMemoryLimit(fsys)
		if ok != (c.limit > 0) || (ok && (limit != c.limit || source != c.source)) {
			t.Errorf("%s: %d %q %v, want %d %q", c.name, limit, source, ok, c.limit, c.source)
		}
	}
}

// auto sets 90% of the container's limit unless GOMEMLIMIT is set; a size
// is set as given; off and a bad size leave the limit alone. Each choice
// is logged.
func TestApplyMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	cg := fstest.MapFS{"sys/fs/cgroup/memory.max": &fstest.MapFile{Data: []byte("1000000000\n")}}
	cases := []struct {
		setting, env string
		want         int64
		log          string
	}{
		{"auto", "", 900_000_000, "set from the container"},
		{"", "", 900_000_000, "set from the container"},
		{"auto", "700MiB", -1, "GOMEMLIMIT from the environment"},
		{"1536MiB", "700MiB", 1536 << 20, "set by --memory-limit"},
		{"2GiB", "", 2 << 30, "set by --memory-limit"},
		{"123456789", "", 123456789, "set by --memory-limit"},
		{"off", "", -1, "runtime's own"},
	}
	for _, c := range cases {
		debug.SetMemoryLimit(math.MaxInt64)
		var buf bytes.Buffer
		got, err := applyMemoryLimit(c.setting, c.env, cg, slog.New(slog.NewTextHandler(&buf, nil)))
		want := c.want
		if want == -1 {
			want = math.MaxInt64 // left as it was
		}
		if err != nil || got != want || debug.SetMemoryLimit(-1) != want || !strings.Contains(buf.String(), c.log) {
			t.Errorf("%q (GOMEMLIMIT %q): %d %v, log %s", c.setting, c.env, got, err, buf.String())
		}
	}
	for _, bad := range []string{"lots", "-1GiB", "0", "1.5GiB", "99999999999TiB"} {
		if _, err := applyMemoryLimit(bad, "", cg, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "memory-limit") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
