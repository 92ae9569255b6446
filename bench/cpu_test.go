package bench

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// cpuTimes is CPU time (user + system, in clock ticks) spent so far by this
// process, by Postgres and by Redis — all three run on this machine for
// the benchmarks (loopback only). It explains a ratio: which side of the
// design a hop's CPU goes to. A backend that exits between two samples
// takes its ticks with it, so samples are taken while the runs' pools are
// open. Without /proc (not Linux), every figure is zero.
type cpuTimes struct{ self, postgres, redis float64 }

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100

func sampleCPU() cpuTimes {
	var c cpuTimes
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	self := strconv.Itoa(os.Getpid())
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open || end+2 > len(s) {
			continue
		}
		f := strings.Fields(s[end+2:])
		if len(f) < 13 {
			continue
		}
		utime, _ := strconv.ParseFloat(f[11], 64)
		stime, _ := strconv.ParseFloat(f[12], 64)
		t := utime + stime
		switch comm := s[open+1 : end]; {
		case filepath.Base(d) == self:
			c.self += t
		case strings.HasPrefix(comm, "postgres"):
			c.postgres += t
		case strings.HasPrefix(comm, "redis-server"):
			c.redis += t
		}
	}
	return c
}

// perHop is the CPU time between two samples in microseconds per hop.
func (c cpuTimes) perHop(since cpuTimes, hops int) cpuTimes {
	us := func(a, b float64) float64 { return (a - b) / clockTicks * 1e6 / float64(hops) }
	return cpuTimes{us(c.self, since.self), us(c.postgres, since.postgres), us(c.redis, since.redis)}
}

func (c cpuTimes) total() float64 { return c.self + c.postgres + c.redis }
