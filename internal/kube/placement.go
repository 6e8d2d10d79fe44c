package kube

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodPlacement tells which node each pod is bound to, without reading the
// pods' spec: a spec may carry secrets in env values.
type PodPlacement interface {
	// NodesOf maps each pod of names still there to its node ("" when
	// unscheduled).
	NodesOf(ctx context.Context, namespace string, names []string) (map[string]string, error)
}

// asTable asks for what kubectl get pods -o wide prints (a Table), the
// object itself left out: a row's cells, of which the Node column.
const asTable = "application/json;as=Table;v=v1;g=meta.k8s.io"

// tablePlacement reads each pod as a Table row.
type tablePlacement struct{ c *Clients }

func (p tablePlacement) NodesOf(ctx context.Context, namespace string, names []string) (map[string]string, error) {
	client, err := p.c.sweepREST()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, name := range names {
		res := client.Get().AbsPath("/api/v1/namespaces", namespace, "pods", name).Param("includeObject", "None").SetHeader("Accept", asTable).Do(ctx)
		if err := res.Error(); apierrors.IsNotFound(err) {
			continue
		} else if err != nil {
			return out, err
		}
		body, err := res.Raw()
		if err != nil {
			return out, err
		}
		node, err := nodeColumn(body)
		if err != nil {
			return out, fmt.Errorf("reading pod %s/%s as a table: %w", namespace, name, err)
		}
		out[name] = node
	}
	return out, nil
}

// nodeColumn reads the Node cell of a one-row pod Table.
func nodeColumn(body []byte) (string, error) {
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil {
		return "", err
	}
	col := -1
	for k, c := range table.ColumnDefinitions {
		if c.Name == "Node" {
			col = k
		}
	}
	if col < 0 || len(table.Rows) != 1 || col >= len(table.Rows[0].Cells) {
		return "", fmt.Errorf("no Node column in %d row(s)", len(table.Rows))
	}
	node, _ := table.Rows[0].Cells[col].(string)
	if node == "<none>" {
		node = ""
	}
	return node, nil
}
