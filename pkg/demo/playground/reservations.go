package playground

import (
	"bytes"
	"errors"

	"github.com/accord-sched/accord/manifests"
)

// reservationPluginAfter is the line of manifests/scheduler/config.yaml's multiPoint list after
// which the playground enables the Reservation plugin.
const reservationPluginAfter = "      - name: LoadAware\n        weight: 2\n"

// SchedulerConfig is the configuration the playground runs accord-scheduler (and the descheduler's
// simulation) with: manifests/scheduler/config.yaml with the Reservation plugin enabled, so that the
// playground policy's ReservationFirst and PodMigration have their reservations placed.
func SchedulerConfig() ([]byte, error) {
	if !bytes.Contains(manifests.SchedulerConfig, []byte(reservationPluginAfter)) {
		return nil, errors.New("manifests/scheduler/config.yaml no longer enables LoadAware with weight 2 in multiPoint: the playground cannot add the Reservation plugin after it")
	}
	return bytes.Replace(manifests.SchedulerConfig, []byte(reservationPluginAfter), []byte(reservationPluginAfter+"      - name: Reservation\n"), 1), nil
}

// migrationHowTo is the playground's how-to for reservations and migrations.
const migrationHowTo = `Move one web pod to node-1, reservation-first (a PodMigration: the descheduler reserves node-1,
evicts the pod once accord-scheduler has placed the reservation, and reports the replacement's node):
  bin/kubectl create -f - <<EOF
  apiVersion: scheduling.accord.dev/v1alpha1
  kind: PodMigration
  metadata: {generateName: move-, namespace: demo}
  spec:
    podName: $(bin/kubectl get pods -n demo -l app=web --field-selector spec.nodeName!=node-1 -o jsonpath='{.items[0].metadata.name}')
    targetNode: node-1
  EOF
  bin/kubectl get podmigrations,reservations -n demo
`
