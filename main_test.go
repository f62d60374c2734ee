package main

// These tests build the program as a release is built (its version, commit
// and date set with -ldflags) and run the binary, as a user and the
// CloudQuery CLI run it.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/parquet/file"
	pb "github.com/cloudquery/plugin-pb-go/pb/plugin/v3"
	"github.com/cq-source-x/cq-source-x/archive/pqfile"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

const (
	testVersion = "v9.8.7-test"
	testCommit  = "0123456789abcdef0123456789abcdef01234567"
	testDate    = "2026-01-02T03:04:05Z"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cq-source-x-main-test-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "cq-source-x")
	goCmd, err := exec.LookPath("go")
	if err != nil {
		goCmd = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	const pkg = "github.com/cq-source-x/cq-source-x/plugin"
	ldflags := fmt.Sprintf("-X %[1]s.Version=%[2]s -X %[1]s.Commit=%[3]s -X %[1]s.BuildDate=%[4]s", pkg, testVersion, testCommit, testDate)
	build := exec.Command(goCmd, "build", "-o", binary, "-ldflags", ldflags, ".")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stdout.String(), stderr.String()
}

// The binary calls itself cq-source-x and tells a mistake once.
func TestTheBinaryCallsItselfCQSourceX(t *testing.T) {
	code, stdout, stderr := run(t, "exprot")
	want := "Error: unknown command \"exprot\" for \"cq-source-x\"\n\nDid you mean this?\n\texport\nRun 'cq-source-x --help' for usage.\n"
	if code != 2 || stdout != "" || stderr != want {
		t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant:\n%s", code, stdout, stderr, want)
	}
}

// A release build says its -ldflags version, commit and date in version,
// --version and info.
func TestTheBinarySaysItsReleaseVersion(t *testing.T) {
	_, version, _ := run(t, "version")
	_, flag, _ := run(t, "--version")
	want := "cq-source-x version " + testVersion + "\ncommit:  " + testCommit + "\nbuilt:   " + testDate + "\n"
	if !strings.HasPrefix(version, want) || version != flag {
		t.Errorf("version:\n%s--version:\n%s\nwant a start of:\n%s", version, flag, want)
	}
	if _, info, _ := run(t, "info"); info != "Package and version: cq-source-x/source/x@"+testVersion+"\n" {
		t.Errorf("info: %q", info)
	}
}

// The CloudQuery CLI starts the plugin as `<binary> serve --network unix
// --address SOCKET --log-level LEVEL --log-format json --no-sentry` (and
// --otel-endpoint, --license when configured): the binary serves the
// plugin there, with its release version, logs JSON on stdout and stops on
// SIGTERM.
func TestTheBinaryServesAsTheCloudQueryCLIStartsIt(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "plugin.sock")
	cmd := exec.Command(binary, "serve", "--network", "unix", "--address", sock, "--log-level", "debug", "--log-format", "json", "--no-sentry")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := pb.NewPluginClient(conn)
	ctx := context.Background()
	var version *pb.GetVersion_Response
	for deadline := time.Now().Add(20 * time.Second); ; {
		if version, err = c.GetVersion(ctx, &pb.GetVersion_Request{}); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the plugin does not answer: %v\n%s%s", err, stdout.String(), stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	name, err := c.GetName(ctx, &pb.GetName_Request{})
	if err != nil || name.Name != "x" || version.Version != testVersion {
		t.Errorf("name %v, version %q, %v", name, version.Version, err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve ended with %v: %s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop on SIGTERM")
	}
	var line map[string]any
	first, _, _ := strings.Cut(stdout.String(), "\n")
	if err := json.Unmarshal([]byte(first), &line); err != nil || line["module"] != "x-source" {
		t.Errorf("the log is not JSON lines of the plugin: %v\n%s", err, stdout.String())
	}
}

// A serve that cannot listen says so once, under the program's name.
func TestTheBinaryTellsAServeFailureOnce(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	code, _, stderr := run(t, "serve", "--address", taken.Addr().String(), "--no-sentry")
	if code != 1 || !strings.HasPrefix(stderr, "Error: failed to listen") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}

// doc writes Markdown by default, as its help says.
func TestTheBinaryDocDefaultsToMarkdown(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := run(t, "doc", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "x_bookmarks.md")); err != nil {
		t.Error(err)
	}
}

// The exporter's Parquet files carry the release version.
func TestTheBinaryWritesItsVersionIntoTheParquetFiles(t *testing.T) {
	out := filepath.Join(t.TempDir(), "demo")
	if code, _, stderr := run(t, "export", "--sandbox", "--out", out, "--quiet"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	files, _ := filepath.Glob(filepath.Join(out, "x_bookmarks", "*.parquet"))
	if len(files) == 0 {
		t.Fatal("no x_bookmarks file")
	}
	r, err := file.OpenParquetFile(files[0], false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	md := r.MetaData()
	if v := md.KeyValueMetadata().FindValue(pqfile.MetadataPluginVersion); v == nil || *v != testVersion {
		t.Errorf("%s = %v, want %s", pqfile.MetadataPluginVersion, v, testVersion)
	}
	if !strings.Contains(md.GetCreatedBy(), "cq-source-x "+testVersion) {
		t.Errorf("created_by %q", md.GetCreatedBy())
	}
}
