package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/codeagent/codeagent/internal/config"
)

// kube_tolerations as written, parsed by config, becomes the pods'
// tolerations: a value asks for Equal, none for Exists.
func TestTolerations(t *testing.T) {
	ts, err := config.ParseTolerations("gpu=true:NoSchedule,spot:PreferNoSchedule")
	if err != nil {
		t.Fatal(err)
	}
	got := Tolerations(ts)
	want := []corev1.Toleration{
		{Key: "gpu", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule},
		{Key: "spot", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectPreferNoSchedule},
	}
	if len(got) != len(want) {
		t.Fatalf("Tolerations = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("toleration %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if Tolerations(nil) != nil {
		t.Error("no setting gives tolerations")
	}
}
