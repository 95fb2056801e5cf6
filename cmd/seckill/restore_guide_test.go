package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The restore guide's commands (docs/OPERATIONS.md, "Backups and restore")
// run as written: with or without the -wal and -shm files beside the old
// database, the old files are moved away and the backup takes their place
// with no -wal or -shm beside it. The guide says the restore needs a Redis
// that outlives the processes.
func TestRestoreGuideRuns(t *testing.T) {
	raw, err := os.ReadFile("../../docs/OPERATIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	_, after, ok := strings.Cut(doc, "To restore: stop every process on the store")
	m := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(after)
	if !ok || m == nil || !strings.Contains(m[1], "DB_PATH") {
		t.Fatal("the SQLite restore has no commands to run")
	}
	if !strings.Contains(after[:strings.Index(after, "### PostgreSQL")], "REDIS_URL") {
		t.Error("the restore guide does not say it needs a Redis of its own (REDIS_URL)")
	}
	for _, beside := range [][]string{nil, {"-wal"}, {"-wal", "-shm"}} {
		dir := t.TempDir()
		dbPath := filepath.Join(dir, "data", "seckill.db")
		backup := filepath.Join(dir, "backup.db")
		os.MkdirAll(filepath.Dir(dbPath), 0o755)
		os.WriteFile(dbPath, []byte("old"), 0o600)
		for _, s := range beside {
			os.WriteFile(dbPath+s, []byte("old"+s), 0o600)
		}
		os.WriteFile(backup, []byte("backup"), 0o600)
		script := regexp.MustCompile(`(?m)^BACKUP=\S+`).ReplaceAllString(m[1], "BACKUP="+backup)
		cmd := exec.Command("sh", "-e", "-c", script)
		cmd.Env = append(os.Environ(), "DB_PATH="+dbPath)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("the restore with %v beside the database: %v\n%s", beside, err, out)
			continue
		}
		if b, _ := os.ReadFile(dbPath); string(b) != "backup" {
			t.Errorf("with %v beside: DB_PATH holds %q, not the backup", beside, b)
		}
		for _, s := range []string{"-wal", "-shm"} {
			if _, err := os.Stat(dbPath + s); err == nil {
				t.Errorf("with %v beside: %s is still beside the restored database", beside, s)
			}
		}
	}
}
