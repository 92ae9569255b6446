package testenv

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"testing"
)

// commandEnv makes a test binary run its command's main (see MainOrCommand).
const commandEnv = "CARRYOVER_TEST_RUN_MAIN"

// MainOrCommand is Main for the package of a command whose tests run the
// command itself, as a user does (real exit codes, real stderr): started by
// Command, the test binary is the command and runs main; otherwise it runs
// the tests.
//
//	func TestMain(m *testing.M) { testenv.MainOrCommand(m, &dbURL, main) }
func MainOrCommand(m *testing.M, dbURL *string, main func()) {
	if os.Getenv(commandEnv) == "1" {
		main()
		return
	}
	Main(m, dbURL)
}

// Command runs the test binary as its command (see MainOrCommand) with
// args, the environment plus env, and no stdin, and returns its exit code
// and output.
func Command(t testing.TB, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), commandEnv+"=1"), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}
