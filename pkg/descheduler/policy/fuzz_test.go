package policy_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins"
	"github.com/accord-sched/accord/pkg/descheduler/policy"
)

// FuzzDecodePolicy: the policy decoder and validation never panic on any input, with the in-tree
// plugins and their args registered; every validation error names the field it is about. The seeds
// are the policies of testdata and of the plugins' testdata, plus hostile ones. `make test` runs the
// seeds; `make fuzz` explores.
func FuzzDecodePolicy(f *testing.F) {
	for _, glob := range []string{"testdata/*.yaml", "../framework/plugins/testdata/policies/*.yaml"} {
		files, err := filepath.Glob(glob)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	for _, s := range []string{
		"apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nmaxNoOfPodsToEvictPerNode: -1\nmaxNoOfPodsToEvictTotal: 2147483648\n",
		"apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: \"ü\"\n  pluginConfig:\n  - name: PodLifeTime\n    args: {maxPodLifeTimeSeconds: -5, states: [\"\"]}\n  plugins: {deschedule: {enabled: [PodLifeTime, PodLifeTime]}}\n",
		"apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: a\n  pluginConfig:\n  - name: LowNodeUtilization\n    args: {thresholds: {cpu: -10, \"ресурс\": 1e30}, targetThresholds: {cpu: 101}}\n  plugins: {balance: {enabled: [LowNodeUtilization]}}\n",
		"apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: a\n  pluginConfig:\n  - name: DefaultEvictor\n    args: {priorityThreshold: {value: 1, name: x}, nodeSelector: \"a in (\"}\n",
		"apiVersion: descheduler/v1alpha1\nkind: DeschedulerPolicy\nstrategies: {}\n",
		"{\"apiVersion\":\"descheduler/v1alpha2\",\"kind\":\"DeschedulerPolicy\",\"profiles\":[{\"name\":\"a\",\"pluginConfig\":[{\"name\":\"Nope\",\"args\":[]}]}]}",
		"&a [*a, *a, *a]",
	} {
		f.Add([]byte(s))
	}
	reg, args := plugins.NewInTreeRegistry(), plugins.NewInTreeArgs()
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := policy.Decode(data, args)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("decode error without a message")
			}
			return
		}
		for _, e := range policy.Validate(p, reg, args) {
			if e.Field == "" {
				t.Fatalf("validation error names no field: %v", e)
			}
		}
	})
}
