package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/moby/moby/client"
)

// engineEndpoint is the engine the docker CLI would talk to: DOCKER_HOST
// when set (client.FromEnv reads it), else the endpoint of the Docker CLI
// context named by DOCKER_CONTEXT or by "currentContext" in the CLI's
// config.json (Colima, Docker Desktop and rootless set one). The client
// library reads only DOCKER_HOST.
type engineEndpoint struct {
	opts     []client.Opt
	describe string // for error messages: "DOCKER_HOST=…" or "docker context NAME (HOST)"
}

func resolveEngine(getenv func(string) string) (engineEndpoint, error) {
	if h := getenv(client.EnvOverrideHost); h != "" {
		return engineEndpoint{opts: []client.Opt{client.FromEnv}, describe: "DOCKER_HOST=" + h}, nil
	}
	configDir := getenv("DOCKER_CONFIG")
	if configDir == "" {
		home := getenv("HOME")
		if home == "" {
			return engineEndpoint{opts: []client.Opt{client.FromEnv}, describe: "DOCKER_HOST unset, no docker context"}, nil
		}
		configDir = filepath.Join(home, ".docker")
	}
	name := getenv("DOCKER_CONTEXT")
	if name == "" {
		var cfg struct {
			CurrentContext string `json:"currentContext"`
		}
		b, err := os.ReadFile(filepath.Join(configDir, "config.json"))
		if err == nil {
			if err := json.Unmarshal(b, &cfg); err != nil {
				return engineEndpoint{}, fmt.Errorf("docker CLI config %s: %w", filepath.Join(configDir, "config.json"), err)
			}
		}
		name = cfg.CurrentContext
	}
	if name == "" || name == "default" {
		return engineEndpoint{opts: []client.Opt{client.FromEnv}, describe: "DOCKER_HOST unset, docker context default"}, nil
	}
	// The CLI's context store: meta/<sha256 of the name>/meta.json, TLS
	// files under tls/<same>/docker/.
	sum := sha256.Sum256([]byte(name))
	id := hex.EncodeToString(sum[:])
	metaFile := filepath.Join(configDir, "contexts", "meta", id, "meta.json")
	b, err := os.ReadFile(metaFile)
	if err != nil {
		return engineEndpoint{}, fmt.Errorf("docker context %q: %w (list contexts with `docker context ls`, or set DOCKER_HOST)", name, err)
	}
	var meta struct {
		Endpoints map[string]struct {
			Host          string `json:"Host"`
			SkipTLSVerify bool   `json:"SkipTLSVerify"`
		} `json:"Endpoints"`
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		return engineEndpoint{}, fmt.Errorf("docker context %q: %s: %w", name, metaFile, err)
	}
	ep, ok := meta.Endpoints["docker"]
	if !ok || ep.Host == "" {
		return engineEndpoint{}, fmt.Errorf("docker context %q has no docker endpoint (%s)", name, metaFile)
	}
	opts := []client.Opt{client.FromEnv, client.WithHost(ep.Host)}
	tlsDir := filepath.Join(configDir, "contexts", "tls", id, "docker")
	ca, cert, key := filepath.Join(tlsDir, "ca.pem"), filepath.Join(tlsDir, "cert.pem"), filepath.Join(tlsDir, "key.pem")
	if fileExists(cert) && fileExists(key) {
		if !fileExists(ca) || ep.SkipTLSVerify {
			ca = ""
		}
		opts = append(opts, client.WithTLSClientConfig(ca, cert, key))
	}
	return engineEndpoint{opts: opts, describe: fmt.Sprintf("docker context %s (%s)", name, ep.Host)}, nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}
