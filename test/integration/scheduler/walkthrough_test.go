package scheduler

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
)

// walkthroughConfig is the scheduler configuration the scheduler-plugins walkthrough prints (seed
// 004), to the letter but for the kubeconfig (which RunInProcess fills in): NodeCRDResourceFit is
// enabled at filter and score only, with every other filter and score plugin disabled, so
// kube-scheduler never calls the plugin's PreFilter.
const walkthroughConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
clientConnection:
  kubeconfig: "REPLACE_ME_WITH_KUBE_CONFIG_PATH"
profiles:
- schedulerName: secondary-scheduler
  plugins:
    filter:
      enabled:
      - name: NodeCRDResourceFit
      disabled:
      - name: "*"
    score:
      enabled:
      - name: NodeCRDResourceFit
      disabled:
      - name: "*"
`

// TestWalkthroughConfig runs the walkthrough's profile on its cluster: six nodes, two of whose
// ClusterScopedResources enable company.net/memory with score 55, and its nginx pod, which must land
// on one of those two (it used to stay Pending with "reading PreFilter state: not found").
func TestWalkthroughConfig(t *testing.T) {
	const companyMem corev1.ResourceName = "company.net/memory"
	alloc := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
		companyMem:            resource.MustParse("64Gi"),
	}
	nodes := testNodes(t, "walk", alloc, 6)
	score := map[corev1.ResourceName]schedv1alpha1.ResourceScore{companyMem: 55}
	createCR(t, nodes[2], map[corev1.ResourceName]bool{companyMem: true}, score)
	createCR(t, nodes[5], map[corev1.ResourceName]bool{companyMem: true}, score)
	enabled := map[string]bool{nodes[2]: true, nodes[5]: true}

	config := filepath.Join(t.TempDir(), "scheduler-config.yaml")
	if err := os.WriteFile(config, []byte(walkthroughConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	ns := env.CreateNamespace(t, "walkthrough")
	startSchedulerWith(t, config)

	mem := corev1.ResourceList{companyMem: resource.MustParse("100Mi")}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "nginx", Namespace: ns},
		Spec: corev1.PodSpec{
			SchedulerName: "secondary-scheduler",
			Containers: []corev1.Container{{
				Name:      "nginx",
				Image:     "nginx:1.14.2",
				Ports:     []corev1.ContainerPort{{ContainerPort: 80}},
				Resources: corev1.ResourceRequirements{Requests: mem, Limits: mem},
			}},
		},
	}
	if _, err := env.Client.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := waitBound(t, ns, "nginx", 60*time.Second); !enabled[got] {
		t.Fatalf("nginx bound to %s, want one of the two nodes whose CR enables %s (%s, %s)", got, companyMem, nodes[2], nodes[5])
	}
}
