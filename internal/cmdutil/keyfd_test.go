package cmdutil

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestReadKeyFD(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString("sk-from-pipe\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Setenv(KeyFDEnv, strconv.Itoa(int(r.Fd())))
	key, err := readKeyFD(os.Getenv)
	if err != nil || key != "sk-from-pipe" {
		t.Fatalf("key %q, err %v", key, err)
	}
	if _, set := os.LookupEnv(KeyFDEnv); set {
		t.Error("the descriptor's variable is still in the environment (children would inherit it)")
	}
	getenv := withKey(func(string) string { return "from-env" }, key)
	if getenv("OPENAI_API_KEY") != "sk-from-pipe" || getenv("OPENAI_MODEL") != "from-env" {
		t.Error("withKey does not answer OPENAI_API_KEY from the pipe and the rest from the environment")
	}
	for _, bad := range []string{"x", "1", "987654"} {
		t.Setenv(KeyFDEnv, bad)
		if _, err := readKeyFD(os.Getenv); err == nil || !strings.Contains(err.Error(), KeyFDEnv) {
			t.Errorf("%s=%s: err %v, want one naming the variable", KeyFDEnv, bad, err)
		}
	}
}
