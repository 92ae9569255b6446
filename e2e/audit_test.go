package e2e_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/simulator"
	"github.com/carryover/carryover/internal/store"
	"github.com/carryover/carryover/internal/testenv"
)

// The audit of model calls is exact through faults: after a Postgres
// outage, a Redis outage, and workers killed mid-job, the calls the
// provider (the simulator) received are exactly the llm_calls rows whose
// request reached it (request_sent), and a delivery that failed before its
// call — at the claim, Postgres being down — is no lost call.

// sentCallsSQL counts the rows of llm_calls whose request reached the
// provider, for the jobs $1.
const sentCallsSQL = `SELECT count(*) FROM llm_calls WHERE job_id = ANY($1::uuid[]) AND request_sent`

// auditJobs enqueues n jobs of several chunks each, cycling through the
// ways a call is made: a stateful background call, a synchronous stateful
// call, and a chat completion (history).
func auditJobs(h *harness, n int) []job {
	h.t.Helper()
	no := false
	kinds := []client.Continuation{
		{},                    // stateful, background (the worker's default here)
		{Background: &no},     // stateful, synchronous
		{Strategy: "history"}, // chat completions, synchronous
	}
	var js []job
	for i := range n {
		k := kinds[i%len(kinds)]
		js = append(js, h.enqueue(fmt.Sprintf("format=csv size=2400 seed=%d", 400+i), client.Request{Format: "csv", MaxOutputTokens: 150,
			Continuation: k}))
	}
	return js
}

// checkAudit waits for the jobs, checks each one's document, and holds the
// simulator's count of the calls it received against llm_calls.
// kills is how many workers were SIGKILLed: a kill in the moment between a
// call's committed start and its request leaving records a lost call the
// provider never received (the README says so). So every call received must
// be on record, and each extra row a lost one, at most one a kill; without
// kills the counts are equal.
func checkAudit(h *harness, js []job, timeout time.Duration, kills int) {
	h.t.Helper()
	ids := make([]string, len(js))
	received, chunks := 0, 0
	for i, j := range js {
		st := h.wait(j.id, timeout)
		if st.Status != "succeeded" {
			h.t.Fatalf("job %s: %s %s", j.id, st.Status, st.Error)
		}
		res, err := h.client.Result(context.Background(), j.id)
		if err != nil {
			h.t.Fatal(err)
		}
		if res.Content != j.doc {
			h.t.Fatalf("job %s: document differs at %d", j.id, firstDiff(res.Content, j.doc))
		}
		ids[i] = j.id
		chunks += st.Chunks
	}
	for _, j := range js {
		received += len(h.sim.Calls(j.tag))
	}
	sent := h.count(sentCallsSQL, ids)
	lost := h.count(`SELECT count(*) FROM llm_calls WHERE job_id = ANY($1::uuid[]) AND status = 'lost'`, ids)
	notSent := h.count(`SELECT count(*) FROM llm_calls WHERE job_id = ANY($1::uuid[]) AND request_sent IS NOT true`, ids)
	h.t.Logf("%d jobs, %d chunks: the simulator received %d calls; llm_calls has %d rows with request_sent (%d lost), %d without",
		len(js), chunks, received, sent, lost, notSent)
	if extra := sent - received; extra > 0 && extra <= min(lost, kills) {
		h.t.Logf("%d lost calls were never received: kills between a start's commit and its request", extra)
	} else if sent != received {
		h.t.Fatalf("llm_calls has %d calls that reached the provider; the provider received %d", sent, received)
	}
	if n := h.count(`SELECT count(*) FROM call_starts WHERE job_id = ANY($1::uuid[])`, ids); n != 0 {
		h.t.Fatalf("%d call starts of finished jobs left", n)
	}
}

// Postgres down for a while in the middle of jobs: deliveries fail at the
// claim (no call made, none recorded as lost); calls under way when it went
// down are recorded as lost by the delivery that makes them again.
func TestAuditExactThroughPostgresOutage(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs a Postgres server of its own")
	}
	pg := startPrivatePostgres(t)
	auditThroughOutage(t, pg, pg.url, testenv.RedisURL(), 4)
}

// auditThroughOutage runs two workers on db and redisURL (dbConns pooled
// connections each), takes srv down for five seconds while calls are in
// flight, and checks the audit once every job is done.
func auditThroughOutage(t *testing.T, srv *server, db, redisURL string, dbConns int) {
	t.Helper()
	h := newHarnessOn(t, simulator.Config{Latency: 800 * time.Millisecond}, db, redisURL)
	h.cfg.Background, h.cfg.BackgroundHold, h.cfg.MaxRetry, h.cfg.DBConns = true, 0, 20, dbConns
	js := auditJobs(h, 12)
	h.startWorker()
	h.startWorker()
	time.Sleep(2 * time.Second) // calls in flight
	srv.stop()
	time.Sleep(5 * time.Second)
	srv.start()
	checkAudit(h, js, 60*time.Second, 0)
}

// Redis down for a while, then back empty: no task survives, the
// reconciler queues every job's next step again.
func TestAuditExactThroughRedisOutage(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs a Redis server of its own")
	}
	rs := startPrivateRedis(t)
	auditThroughOutage(t, rs, testenv.DB(t), rs.url, 3)
}

// Worker processes killed (SIGKILL) at random moments, mid-call or not:
// every call the dead workers sent is on record, as lost or resumed, and
// nothing else.
func TestAuditExactThroughWorkerKills(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and kills worker processes")
	}
	h := newHarnessWith(t, simulator.Config{Latency: 800 * time.Millisecond})
	bin := testenv.BuildWorker(t)
	js := auditJobs(h, 12)
	env := []string{"CARRYOVER_BACKGROUND_HOLD=0", "CARRYOVER_DB_CONNS=3", "CARRYOVER_MAX_RETRY=20"}
	procs := []*exec.Cmd{h.startProcess(bin, env...), h.startProcess(bin, env...)}
	kills := 0
	for deadline := time.Now().Add(12 * time.Second); time.Now().Before(deadline); kills++ {
		time.Sleep(time.Duration(700+rand.IntN(1300)) * time.Millisecond)
		i := rand.IntN(len(procs))
		if err := procs[i].Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_, _ = procs[i].Process.Wait()
		procs[i] = h.startProcess(bin, env...)
	}
	t.Logf("%d workers killed", kills)
	checkAudit(h, js, 60*time.Second, kills)
}

// server is a database or queue server of a test's own, on a free loopback
// port, which the test stops and starts.
type server struct {
	t    *testing.T
	url  string
	args []string // the command that runs it
	cred *syscall.Credential
	dir  string
	cmd  *exec.Cmd
}

// start runs the server and waits until it answers.
func (s *server) start() {
	s.t.Helper()
	cmd := exec.Command(s.args[0], s.args[1:]...)
	cmd.Dir = s.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	logf, err := os.OpenFile(filepath.Join(s.dir, "server.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		s.t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.cmd = cmd
	deadline := time.Now().Add(20 * time.Second)
	for !s.ready() {
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
			s.t.Fatalf("%s never became ready:\n%s", filepath.Base(s.args[0]), log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ready reports whether the server accepts connections.
func (s *server) ready() bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if strings.HasPrefix(s.url, "postgres") {
		conn, err := pgx.Connect(ctx, s.url)
		if err != nil {
			return false
		}
		_ = conn.Close(ctx)
		return true
	}
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(strings.TrimSuffix(s.url, "/0"), "redis://"), time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	buf := make([]byte, 16)
	n, _ := c.Read(buf)
	return strings.HasPrefix(string(buf[:n]), "+PONG")
}

// stop shuts the server down (Postgres: a fast shutdown, which ends every
// session; Redis: killed, and it keeps nothing) and waits for it to exit.
func (s *server) stop() {
	s.t.Helper()
	if s.cmd == nil {
		return
	}
	sig := syscall.SIGKILL
	if strings.HasPrefix(s.url, "postgres") {
		sig = syscall.SIGINT
	}
	_ = s.cmd.Process.Signal(sig)
	_ = s.cmd.Wait()
	s.cmd = nil
}

// serverDir is a directory the server's user owns; removed when the test ends.
func serverDir(t *testing.T, cred *syscall.Credential) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "carryover-server-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// serverUser is who runs the servers: Postgres refuses to run as root, so a
// root test runs them as the postgres user (nil: as the test's own user).
func serverUser(t *testing.T) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Skip("running as root with no postgres user to run a private Postgres as")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

// startPrivatePostgres initializes and starts a Postgres server of the
// test's own (trust authentication on loopback, superuser root), migrated.
func startPrivatePostgres(t *testing.T) *server {
	t.Helper()
	initdb, err := exec.LookPath("initdb")
	if err != nil {
		t.Skip("initdb not found")
	}
	postgres, err := exec.LookPath("postgres")
	if err != nil {
		t.Skip("postgres not found")
	}
	cred := serverUser(t)
	dir := serverDir(t, cred)
	data := filepath.Join(dir, "data")
	cmd := exec.Command(initdb, "-D", data, "-U", "root", "-A", "trust", "-E", "UTF8", "--no-sync", "--no-instructions")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	port := freePort(t)
	s := &server{t: t, dir: dir, cred: cred, url: fmt.Sprintf("postgres://root@127.0.0.1:%d/postgres?sslmode=disable", port),
		args: []string{postgres, "-D", data, "-p", strconv.Itoa(port), "-k", dir, "-c", "listen_addresses=127.0.0.1",
			"-c", "fsync=off", "-c", "max_connections=60", "-c", "shared_buffers=16MB"}}
	s.start()
	t.Cleanup(s.stop)
	if err := store.Migrate(s.url); err != nil {
		t.Fatal(err)
	}
	return s
}

// startPrivateRedis starts a Redis server of the test's own that keeps
// nothing on disk: stopped and started again, it is empty.
func startPrivateRedis(t *testing.T) *server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not found")
	}
	cred := serverUser(t)
	dir := serverDir(t, cred)
	port := freePort(t)
	s := &server{t: t, dir: dir, cred: cred, url: fmt.Sprintf("redis://127.0.0.1:%d/0", port),
		args: []string{bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir}}
	s.start()
	t.Cleanup(s.stop)
	return s
}

// A request that never left — the provider's port refuses the connection —
// is a failed attempt whose request did not reach the provider, and no
// lost call; an answered one (a 500) reached it.
func TestAuditRequestSent(t *testing.T) {
	t.Parallel()
	stop, _ := client.ParseErrorPolicy("stop_on_any_error")
	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		h.cfg.OpenAIBaseURL = fmt.Sprintf("http://127.0.0.1:%d/v1", freePort(t))
		h.startWorker()
		j := h.enqueue("format=text size=300 seed=3", client.Request{Continuation: client.Continuation{ErrorPolicy: &stop}})
		if st := h.wait(j.id, 30*time.Second); st.Status != "failed" {
			t.Fatalf("status %s", st.Status)
		}
		if n := h.count(`SELECT count(*) FROM llm_calls WHERE job_id = $1::uuid AND status = 'failed' AND NOT request_sent`, j.id); n != 1 {
			t.Fatalf("%d failed attempts recorded as not sent, want 1", n)
		}
		if n := h.count(`SELECT count(*) FROM llm_calls WHERE job_id = $1::uuid AND (request_sent OR status = 'lost')`, j.id); n != 0 {
			t.Fatalf("%d attempts recorded as sent or lost; nothing reached a provider", n)
		}
	})
	t.Run("answered", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		h.startWorker()
		j := h.enqueue("format=text size=300 seed=3 faults=500@0", client.Request{Continuation: client.Continuation{ErrorPolicy: &stop}})
		if st := h.wait(j.id, 30*time.Second); st.Status != "failed" {
			t.Fatalf("status %s", st.Status)
		}
		if n := h.count(`SELECT count(*) FROM llm_calls WHERE job_id = $1::uuid AND status = 'failed' AND http_status = 500 AND request_sent`, j.id); n != 1 {
			t.Fatalf("%d answered failures recorded as sent, want 1", n)
		}
		if got := len(h.sim.Calls(j.tag)); got != 1 {
			t.Fatalf("the simulator received %d calls, want 1", got)
		}
	})
}
