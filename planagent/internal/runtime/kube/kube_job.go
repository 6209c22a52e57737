package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

// The labels are the docker ones (LabelManaged, LabelRun, LabelTask,
// LabelAttempt, LabelRole): values sanitised, the exact run and task ids
// in annotations of the same keys.
const (
	// The pod's one emptyDir, mounted at layout.AgentDir in every container:
	// bin/ (codingagent), volumes/ (the attempt's files), run/ (markers).
	kubeVolume    = "codeagent"
	kubeTmpVolume = "tmp"
	kubeReady     = layout.AgentDir + "/run/inputs-ready" // planagent: the inputs are in
	kubeCollected = layout.AgentDir + "/run/collected"    // planagent: the results are out
	// kubeUID is the agent user of `make image`; any non-root uid works:
	// the emptyDir is writable by the pod's fsGroup.
	kubeUID = 10001
)

var dnsUnsafe = regexp.MustCompile(`[^a-z0-9-]+`)

// dnsPart lowercases s and keeps [a-z0-9-], for names and label values.
func dnsPart(s string) string {
	return strings.Trim(dnsUnsafe.ReplaceAllString(strings.ToLower(s), "-"), "-")
}

// jobName is the attempt's Job name: deterministic (a restarted planagent
// finds it again), DNS-1123 and at most 63 characters (the Job controller
// puts it in a label of the pod); long ids are cut and a hash of the full
// triple keeps names distinct.
func jobName(run, task string, attempt int) string {
	return kubeName("ca", run, task, "a"+strconv.Itoa(attempt))
}

// execJobName names the Job of one acceptance command.
func execJobName(run string, seq uint64) string {
	return kubeName("ca", run, "x", strconv.FormatUint(seq, 10))
}

// secretName is the run's Secret.
func secretName(run string) string { return kubeName("ca", run, "key") }

func kubeName(parts ...string) string {
	clean := make([]string, 0, len(parts))
	for _, p := range parts {
		if c := dnsPart(p); c != "" {
			clean = append(clean, c)
		}
	}
	name := strings.Join(clean, "-")
	if len(name) <= 63 && slices.Equal(clean, parts) {
		return name
	}
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	h := hex.EncodeToString(sum[:])[:10]
	if len(name) > 52 {
		name = strings.TrimRight(name[:52], "-")
	}
	return name + "-" + h
}

// labelValue makes s a valid label value (≤ 63, alphanumeric at both ends).
func labelValue(s string) string {
	v := strings.Trim(regexp.MustCompile(`[^A-Za-z0-9._-]+`).ReplaceAllString(s, "-"), "-_.")
	if len(v) > 63 || v != s {
		sum := sha256.Sum256([]byte(s))
		h := hex.EncodeToString(sum[:])[:8]
		if len(v) > 54 {
			v = strings.Trim(v[:54], "-_.")
		}
		v = strings.Trim(v+"-"+h, "-_.")
	}
	return v
}

func labelSelector(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ",")
}

// podSpec is what an attempt's or an acceptance command's pod runs.
type podSpec struct {
	name, role string
	task       string
	attempt    int
	deadline   int64    // activeDeadlineSeconds
	command    []string // run by the agent container once the inputs are in
	workdir    string
	withAgent  bool   // the inputs' stream brings codingagent, the env the model settings
	token      string // the attempt's model gateway token (withAgent, with a gateway)
	// proxyUser names the pod at the egress proxy (the attempt whose copy
	// it works in, attempt.Name; runClient: the run's), under closed
	// egress; proxySecret is its credential there (proxyCreds).
	proxyUser, proxySecret string
}

// secretSpec is the run's Secret: the secret settings (the API key, the
// MCP servers' variables), each under its variable's name.
func (k *Kube) secretSpec() *corev1.Secret {
	data := make(map[string][]byte, len(k.secretKeys))
	for _, name := range k.secretKeys {
		data[name] = []byte(k.opts.Env[name])
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: k.secret, Namespace: k.ns,
			Labels:      map[string]string{layout.LabelManaged: "true", layout.LabelRun: labelValue(k.opts.RunID)},
			Annotations: map[string]string{layout.LabelRun: k.opts.RunID}},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
}

// jobSpec builds the Job: one pod, never restarted (planagent owns
// retries), bounded by activeDeadlineSeconds, removed by the TTL
// controller if planagent did not delete it, without a service account
// token, every container non-root without privileges. Its pod has
//
//   - container "agent" (the user's Image): waits for the inputs-ready
//     marker, then runs the command in the workdir; its exit is the
//     attempt's end as the API reports it, which the agent cannot forge;
//   - container "io" (AgentImage, busybox tar): the end planagent's
//     pods/exec tar streams talk to (with the inputs it copies the static
//     codingagent into the shared emptyDir: withAgent only, pushTar); it keeps the pod (and its emptyDir)
//     alive after the agent exits until planagent has collected the
//     results (activeDeadlineSeconds bounds it).
//
// With a model gateway the agent gets its attempt's token and the
// gateway's URL; without one the API key comes from the run's Secret by
// reference (secretKeyRef).
func (k *Kube) jobSpec(s podSpec) *batchv1.Job {
	labels := map[string]string{layout.LabelManaged: "true", layout.LabelRun: labelValue(k.opts.RunID), layout.LabelRole: s.role}
	annotations := map[string]string{layout.LabelRun: k.opts.RunID}
	if s.task != "" {
		labels[layout.LabelTask] = labelValue(s.task)
		labels[layout.LabelAttempt] = strconv.Itoa(s.attempt)
		annotations[layout.LabelTask] = s.task
		annotations[layout.LabelAttempt] = strconv.Itoa(s.attempt)
	}
	no := false
	sc := restrictedContainer()
	mounts := []corev1.VolumeMount{{Name: kubeVolume, MountPath: layout.AgentDir}, {Name: kubeTmpVolume, MountPath: "/tmp"}}
	small := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
	}
	wait := fmt.Sprintf(`until [ -e %s ]; do sleep 0.2; done; cd "$1" || exit 125; shift; `, kubeReady)
	// The agent's root filesystem stays writable, as with docker: images
	// keep caches there (GOPATH, pip) and the pod is thrown away.
	agentSC := sc.DeepCopy()
	agentSC.ReadOnlyRootFilesystem = &no
	agent := corev1.Container{
		Name: "agent", Image: k.opts.Image, ImagePullPolicy: k.opts.PullPolicy,
		Command:         append([]string{"/bin/sh", "-c", wait + `exec "$@"`, "codeagent-wait", s.workdir}, s.command...),
		Env:             k.podEnv(s),
		VolumeMounts:    mounts,
		SecurityContext: agentSC,
		Resources:       k.agentResources(),
	}
	io := corev1.Container{
		Name: "io", Image: k.opts.AgentImage, ImagePullPolicy: k.opts.PullPolicy,
		// activeDeadlineSeconds ends it when planagent never collects.
		Command: []string{"/bin/sh", "-c", fmt.Sprintf(`mkdir -p %[1]s/volumes %[1]s/run && until [ -e %[2]s ]; do sleep 0.2; done`,
			layout.AgentDir, kubeCollected)},
		Env:             []corev1.EnvVar{{Name: "HOME", Value: "/tmp"}},
		VolumeMounts:    mounts,
		SecurityContext: sc,
		Resources:       small,
	}
	pod := k.restrictedPod(agent, io)
	pod.Volumes = []corev1.Volume{
		{Name: kubeVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: kubeTmpVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	return k.job(s.name, labels, annotations, s.deadline, pod)
}

// job wraps a pod in a Job that never retries (planagent owns retries),
// bounded by deadline seconds, removed by the TTL controller if planagent
// did not delete it.
func (k *Kube) job(name string, labels, annotations map[string]string, deadline int64, pod corev1.PodSpec) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: k.ns, Labels: labels, Annotations: annotations},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr(int32(0)),
			ActiveDeadlineSeconds:   &deadline,
			TTLSecondsAfterFinished: ptr(int32(kubeJobTTL)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
				Spec:       pod,
			},
		},
	}
}

// restrictedContainer is every container's security context: non-root, no
// privilege or escalation, no capability, RuntimeDefault seccomp, a
// read-only root filesystem.
func restrictedContainer() *corev1.SecurityContext {
	no, yes := false, true
	return &corev1.SecurityContext{
		RunAsNonRoot:             &yes,
		AllowPrivilegeEscalation: &no,
		Privileged:               &no,
		ReadOnlyRootFilesystem:   &yes,
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// restrictedPod holds containers as uid kubeUID, never restarted, without
// a service account token, on the nodes the config allows.
func (k *Kube) restrictedPod(containers ...corev1.Container) corev1.PodSpec {
	no, yes := false, true
	uid := int64(kubeUID)
	return corev1.PodSpec{
		RestartPolicy:                 corev1.RestartPolicyNever,
		AutomountServiceAccountToken:  &no,
		EnableServiceLinks:            &no,
		TerminationGracePeriodSeconds: ptr(int64(layout.StopGrace)),
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot: &yes, RunAsUser: &uid, RunAsGroup: &uid, FSGroup: &uid,
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		NodeSelector: maps.Clone(k.opts.NodeSelector),
		Tolerations:  slices.Clone(k.opts.Tolerations),
		Containers:   containers,
	}
}

// podEnv: HOME on the writable /tmp, the egress proxy under closed
// egress, the model settings (sorted) for an agent, the secret ones (the
// API key, the MCP servers' variables) by reference to the Secret.
func (k *Kube) podEnv(s podSpec) []corev1.EnvVar {
	// git in the pod trusts the copy whoever owns it, as in docker (by
	// environment: no config file is written).
	env := []corev1.EnvVar{{Name: "HOME", Value: "/tmp"},
		{Name: "GIT_CONFIG_COUNT", Value: "1"}, {Name: "GIT_CONFIG_KEY_0", Value: "safe.directory"}, {Name: "GIT_CONFIG_VALUE_0", Value: "*"}}
	if !s.withAgent {
		// Acceptance commands get none of the model settings (as with
		// docker), only the way to the allow-list.
		return append(env, k.proxyEnv(s.proxyUser, s.proxySecret)...)
	}
	// The agent calls the gateway directly (the policy lets it), not
	// through the proxy, which would refuse this host's address.
	proxy := k.proxyEnv(s.proxyUser, s.proxySecret, k.gatewayHost())
	env = append(env, proxy...)
	token := s.token
	for _, key := range slices.Sorted(maps.Keys(k.opts.Env)) {
		// The proxy settings are the run's own under closed egress.
		mine := slices.ContainsFunc(proxy, func(e corev1.EnvVar) bool { return e.Name == key })
		if !mine && !k.isSecret(key) && (k.gatewayBase == "" || key != "OPENAI_BASE_URL") {
			env = append(env, corev1.EnvVar{Name: key, Value: k.opts.Env[key]})
		}
	}
	if k.gatewayBase != "" {
		// The token is worth something only at the gateway and only while
		// the attempt runs: a plain value, not a Secret.
		// The agent waits for a gateway that does not listen (planagent
		// killed, to be resumed) instead of failing its attempt.
		env = append(env, corev1.EnvVar{Name: config.APIKeyEnv, Value: token},
			corev1.EnvVar{Name: "OPENAI_BASE_URL", Value: k.gatewayBase},
			corev1.EnvVar{Name: config.ModelDownGraceEnv, Value: gatewayDownGrace})
	}
	for _, key := range k.secretKeys {
		env = append(env, corev1.EnvVar{Name: key, ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: k.secret}, Key: key},
		}})
	}
	return env
}

// agentResources: the configured requests (small by default, so a busy
// node still schedules the pod) and limits.
func (k *Kube) agentResources() corev1.ResourceRequirements {
	r := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		Limits:   corev1.ResourceList{},
	}
	set := func(list corev1.ResourceList, mem string, cpus float64) {
		if m, err := config.ParseMemory(mem); mem != "" && err == nil {
			list[corev1.ResourceMemory] = *resource.NewQuantity(m, resource.BinarySI)
		}
		if cpus > 0 {
			list[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(cpus*1000), resource.DecimalSI)
		}
	}
	set(r.Requests, k.opts.MemoryRequest, k.opts.CPURequest)
	set(r.Limits, k.opts.Memory, k.opts.CPUs)
	return r
}

func ptr[T any](v T) *T { return &v }
