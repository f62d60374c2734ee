package auth

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// TestRotationAcrossProcesses runs real OS processes (this test binary re-executed) that share
// one token file and force refreshes as fast as they can. The fake server fails the test if a
// spent refresh token ever arrives.
func TestRotationAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	e := newEnv(t, "")
	const procs, rounds = 3, 15
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var cmds []*exec.Cmd
	for range procs {
		cmd := exec.CommandContext(ctx, exe, "-test.run=^TestHelperRefreshProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(),
			"AUTH_HELPER_FILE="+e.file.Path,
			"AUTH_HELPER_TOKEN_URL="+e.fx.tokenURL(),
			"AUTH_HELPER_ROUNDS="+strconv.Itoa(rounds))
		cmds = append(cmds, cmd)
	}
	outs := make([]chan []byte, procs)
	for i, cmd := range cmds {
		outs[i] = make(chan []byte, 1)
		go func() {
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("helper %d: %v\n%s", i, err, out)
			}
			outs[i] <- out
		}()
	}
	for _, ch := range outs {
		<-ch
	}
	_, refreshes, spent, _ := e.fx.counts()
	if spent != 0 {
		t.Errorf("%d spent refresh tokens sent", spent)
	}
	if refreshes < rounds || refreshes > procs*rounds {
		t.Errorf("%d refreshes for %d processes × %d forced refreshes", refreshes, procs, rounds)
	}
	// The file ends with a live pair.
	disk := e.load()
	e.fx.mu.Lock()
	live := e.fx.refresh[disk.RefreshToken]
	e.fx.mu.Unlock()
	if !live {
		t.Error("the token file does not hold the live refresh token")
	}
}

// TestHelperRefreshProcess is the child of TestRotationAcrossProcesses.
func TestHelperRefreshProcess(t *testing.T) {
	path := os.Getenv("AUTH_HELPER_FILE")
	if path == "" {
		t.Skip("helper process for TestRotationAcrossProcesses")
	}
	rounds, _ := strconv.Atoi(os.Getenv("AUTH_HELPER_ROUNDS"))
	cfg := Config{ClientID: "app", TokenURL: os.Getenv("AUTH_HELPER_TOKEN_URL"), RedirectURL: "http://127.0.0.1:1/callback"}
	s, err := NewFileTokenSource(t.Context(), cfg, TokenFile{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	for range rounds {
		tok, err := s.Token()
		if err != nil {
			t.Fatal(err)
		}
		s.Invalidate(tok.AccessToken) // as after a 401: the next Token refreshes or adopts a newer one
	}
}
