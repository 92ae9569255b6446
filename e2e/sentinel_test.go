package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/simulator"
)

// Redis behind Sentinel fails over in the middle of jobs, and the failover
// loses writes: the replica is frozen while the workers go on writing to
// the master, then the master is killed and the stale replica promoted —
// asynchronous replication's worst case. Tasks the workers enqueued (next
// chunks, merges) and acknowledged exist only on the dead master. The
// workers, the client and the reconciler follow the new master through
// REDIS_URL=redis-sentinel://…, Postgres still knows every job, and every
// job succeeds with its exact document, each chunk's model call made once.
func TestSentinelFailoverLosesNoJob(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a Redis master, replica and sentinel")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed (make services installs it)")
	}
	ctx := context.Background()
	dir := t.TempDir()
	master := startRedisServer(t, dir, "master")
	replica := startRedisServer(t, dir, "replica", "--replicaof", "127.0.0.1", strconv.Itoa(master.port))
	waitFor(t, 10*time.Second, "the replica never synced", func() bool {
		info, _ := replica.rdb.Info(ctx, "replication").Result()
		return strings.Contains(info, "master_link_status:up")
	})
	sentinel := startSentinel(t, dir, master.port)
	waitFor(t, 10*time.Second, "the sentinel never found the replica", func() bool {
		rs, _ := sentinel.sentinel.Replicas(ctx, "mymaster").Result()
		return len(rs) == 1 && !strings.Contains(rs[0]["flags"], "down")
	})

	h := newHarnessWith(t, simulator.Config{Latency: 250 * time.Millisecond})
	h.cfg.RedisURL = fmt.Sprintf("redis-sentinel://127.0.0.1:%d/mymaster", sentinel.port)
	h.cfg.DBConns = 4
	c, err := client.New(ctx, client.Config{DatabaseURL: h.cfg.DatabaseURL, RedisURL: h.cfg.RedisURL,
		ChunkQueue: h.cfg.ChunkQueue, WebhookAllow: h.cfg.WebhookAllow, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	h.client = c
	var all []job
	for i := range 12 {
		all = append(all, h.enqueue(fmt.Sprintf("format=csv size=14000 seed=%d", 100+i), client.Request{Format: "csv"}))
	}
	ids := make([]string, len(all))
	for i, j := range all {
		ids[i] = j.id
	}
	chunks := func() int {
		return h.count(`SELECT count(*) FROM chunks WHERE job_id = ANY($1::uuid[])`, ids)
	}
	h.startWorker()
	h.startWorker()
	waitFor(t, 20*time.Second, "the jobs never got going", func() bool { return chunks() >= 2*len(all) })

	// Freeze the replica and cut its link (it cannot reconnect while
	// frozen): from here on the master's writes are not replicated — not
	// even into the replica's socket buffer. A marker shows that they are
	// lost.
	if err := replica.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := master.rdb.ClientKillByFilter(ctx, "TYPE", "replica").Err(); err != nil {
		t.Fatal(err)
	}
	if err := master.rdb.Set(ctx, "carryover:test:unreplicated", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	before := chunks()
	time.Sleep(1200 * time.Millisecond)
	during := chunks() - before
	// The master dies; the replica, thawed, is promoted.
	_ = master.cmd.Process.Kill()
	if err := replica.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	waitFor(t, 20*time.Second, "the sentinel never promoted the replica", func() bool {
		addr, err := sentinel.sentinel.GetMasterAddrByName(ctx, "mymaster").Result()
		return err == nil && len(addr) == 2 && addr[1] == strconv.Itoa(replica.port)
	})
	t.Logf("%d chunks stored while the replica was frozen; replica promoted %v after the master died",
		during, time.Since(killed).Round(100*time.Millisecond))
	if during == 0 {
		t.Fatal("no chunk was stored while the replica was frozen: the failover lost no task, and the test proves nothing")
	}
	if err := replica.rdb.Get(ctx, "carryover:test:unreplicated").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("the new master has the write made after the replica froze (%v): no write was lost", err)
	}

	for _, j := range all {
		st := h.wait(j.id, 45*time.Second)
		if st.Status != "succeeded" {
			t.Fatalf("job %s: %s (%s)", j.id, st.Status, st.Error)
		}
		res, err := h.client.Result(ctx, j.id)
		if err != nil || res.Content != j.doc {
			t.Fatalf("job %s: document differs after the failover (%v)", j.id, err)
		}
		// Exactly once: as many model calls received, and as many
		// successful calls on record, as chunks stored.
		if calls := len(h.sim.Calls(j.tag)); calls != st.Chunks {
			t.Fatalf("job %s: the model got %d calls for %d chunks", j.id, calls, st.Chunks)
		}
		if n := h.count(`SELECT count(*) FROM llm_calls WHERE job_id = $1::uuid AND status = 'succeeded'`, j.id); n != st.Chunks {
			t.Fatalf("job %s: %d successful calls for %d chunks", j.id, n, st.Chunks)
		}
	}
	// The figure (go test -v -run TestSentinelFailoverLosesNoJob ./e2e/):
	// jobs whose next task was lost wait for the reconciler (StaleAfter 3s
	// and a scan every second here; 2 min and 15 s by default).
	t.Logf("every job finished %v after the master died", time.Since(killed).Round(100*time.Millisecond))
}

// redisServer is a redis-server (or sentinel) process the test started on
// a loopback port of its own, killed when the test ends.
type redisServer struct {
	port     int
	cmd      *exec.Cmd
	rdb      *redis.Client         // a plain client of this server
	sentinel *redis.SentinelClient // for a sentinel
}

// startRedisServer runs redis-server on a free loopback port, without
// persistence, with args added.
func startRedisServer(t *testing.T, dir, name string, args ...string) *redisServer {
	t.Helper()
	wd := filepath.Join(dir, name)
	if err := os.MkdirAll(wd, 0o700); err != nil {
		t.Fatal(err)
	}
	return startRedisProcess(t, name, freePort, func(port int) []string {
		return append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", wd}, args...)
	})
}

// startSentinel runs a sentinel that monitors the master on masterPort as
// "mymaster", alone (quorum 1), and declares it down after a second.
func startSentinel(t *testing.T, dir string, masterPort int) *redisServer {
	t.Helper()
	conf := filepath.Join(dir, "sentinel.conf")
	s := startRedisProcess(t, "sentinel", freePort, func(port int) []string {
		// The sentinel rewrites its configuration file: one per attempt.
		text := fmt.Sprintf(`port %d
bind 127.0.0.1
dir %s
sentinel monitor mymaster 127.0.0.1 %d 1
sentinel down-after-milliseconds mymaster 1000
sentinel failover-timeout mymaster 4000
sentinel parallel-syncs mymaster 1
`, port, dir, masterPort)
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return []string{conf, "--sentinel"}
	})
	s.sentinel = redis.NewSentinelClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", s.port)})
	t.Cleanup(func() { _ = s.sentinel.Close() })
	return s
}

// startRedisProcess starts redis-server with the arguments args gives for a
// port pick chose, trying another port if that one was taken meanwhile, and
// waits until it answers.
func startRedisProcess(t *testing.T, name string, pick func(*testing.T) int, args func(port int) []string) *redisServer {
	t.Helper()
	for attempt := 0; ; attempt++ {
		port := pick(t)
		cmd := exec.Command("redis-server", args(port)...)
		if testing.Verbose() {
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-exited
		})
		rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), DialTimeout: time.Second,
			ReadTimeout: time.Second, MaxRetries: -1})
		t.Cleanup(func() { _ = rdb.Close() })
		deadline := time.Now().Add(10 * time.Second)
		for {
			select {
			case <-exited:
			default:
				if rdb.Ping(context.Background()).Err() != nil && time.Now().Before(deadline) {
					time.Sleep(20 * time.Millisecond)
					continue
				}
			}
			break
		}
		select {
		case <-exited:
			if attempt < 3 {
				continue // the port was taken between freePort and the start
			}
			t.Fatalf("%s: redis-server exited", name)
		default:
		}
		if err := rdb.Ping(context.Background()).Err(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return &redisServer{port: port, cmd: cmd, rdb: rdb}
	}
}

// freePort is a loopback TCP port free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
