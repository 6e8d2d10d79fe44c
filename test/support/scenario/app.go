package scenario

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// App is an application installed the way a Helm chart installs one, with
// an operator-shaped database beside it: what a mistaken deletion takes,
// and what a restore must bring back working. Its objects:
//
//   - a StatefulSet `db` with its headless Service and the claim its
//     volumeClaimTemplate made, bound to a volume of its own;
//   - a Deployment `web` (its template carries a checksum of its
//     ConfigMap), a NodePort Service, an Ingress with its TLS Secret;
//   - a migration Job, a CronJob;
//   - a NetworkPolicy, a ResourceQuota, a LimitRange, a
//     PodDisruptionBudget, a HorizontalPodAutoscaler;
//   - Helm's release Secret, a 600 KB ConfigMap, a ConfigMap with
//     binaryData, an immutable Secret;
//   - a ServiceAccount with an image pull Secret, a Role and RoleBinding;
//   - a custom resource with a status subresource (a Widget);
//   - a Database (a custom resource) whose claim and generated credentials
//     Secret it owns (controller owner references, as database operators
//     make them), the claim bound to a volume of its own.
type App struct {
	Namespace string
	// Volumes are the PersistentVolumes made for the claims (data-db-0
	// and the database's).
	Volumes []string
	AppOptions
}

// AppOptions shape an App.
type AppOptions struct {
	// Grace is its pods' termination grace period, in seconds.
	Grace int64
	// NodePort is the web Service's node port.
	NodePort int32
	// Reclaim is its volumes' reclaim policy (default Delete).
	Reclaim corev1.PersistentVolumeReclaimPolicy
}

// AppGroup is the group of the App's custom resources.
const AppGroup = "app.ns-doctor.test"

// App's custom resources.
var (
	WidgetsGVR   = schema.GroupVersionResource{Group: AppGroup, Version: "v1", Resource: "widgets"}
	DatabasesGVR = schema.GroupVersionResource{Group: AppGroup, Version: "v1", Resource: "databases"}
)

// InstallApp creates the App in namespace ns (created first) and waits
// until its workloads run.
func (c *Cluster) InstallApp(ctx context.Context, ns string, opts AppOptions) (*App, error) {
	if opts.Reclaim == "" {
		opts.Reclaim = corev1.PersistentVolumeReclaimDelete
	}
	a := &App{Namespace: ns, AppOptions: opts}
	if err := c.CreateNamespace(ctx, ns); err != nil {
		return nil, err
	}
	for _, crd := range []struct{ kind, plural string }{{"Widget", "widgets"}, {"Database", "databases"}} {
		if err := c.ensureStatusCRD(ctx, crd.kind, crd.plural); err != nil {
			return nil, err
		}
	}
	steps := []func(context.Context, *App, int64) error{c.appConfig, c.appIdentity, c.appPolicies, c.appVolumes, c.appServices,
		c.appWorkloads, c.appDatabase, c.appWidget}
	for _, step := range steps {
		if err := step(ctx, a, opts.Grace); err != nil {
			return nil, err
		}
	}
	return a, c.waitRunning(ctx, ns)
}

func (c *Cluster) appConfig(ctx context.Context, a *App, _ int64) error {
	ns := a.Namespace
	big := strings.Repeat("0123456789abcdef", 600*1024/16)
	objs := []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Name: "web-config", Labels: helmLabels("web")}, Data: map[string]string{"app.yaml": "listen: 8080\nlog: info\n"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "big"}, Data: map[string]string{"blob": big}},
		{ObjectMeta: metav1.ObjectMeta{Name: "binary"}, BinaryData: map[string][]byte{"logo.png": {0x89, 'P', 'N', 'G', 0, 1, 2, 0xff}}},
	}
	for _, o := range objs {
		if _, err := c.Kube.CoreV1().ConfigMaps(ns).Create(ctx, o, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("configmap %s: %w", o.Name, err)
		}
	}
	secrets := []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1.shop.v1", Labels: map[string]string{"name": "shop", "owner": "helm", "status": "deployed", "version": "1"}},
			Type: "helm.sh/release.v1", Data: map[string][]byte{"release": []byte("H4sIAAAAAAAA/release-of-shop")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "web-tls"}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"tls.crt": []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"), "tls.key": []byte("-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "frozen"}, Immutable: ptr.To(true), Data: map[string][]byte{"key": []byte("never-changes")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "registry"}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"registry.example":{"auth":"dTpw"}}}`)}},
	}
	for _, o := range secrets {
		if _, err := c.Kube.CoreV1().Secrets(ns).Create(ctx, o, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("secret %s: %w", o.Name, err)
		}
	}
	return nil
}

func (c *Cluster) appIdentity(ctx context.Context, a *App, _ int64) error {
	ns := a.Namespace
	if _, err := c.Kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: helmLabels("web")},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "registry"}}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("serviceaccount web: %w", err)
	}
	if _, err := c.Kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "watch"}}}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("role web: %w", err)
	}
	if _, err := c.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "web"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "web", Namespace: ns}}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("rolebinding web: %w", err)
	}
	return nil
}

func (c *Cluster) appPolicies(ctx context.Context, a *App, _ int64) error {
	ns := a.Namespace
	if _, err := c.Kube.NetworkingV1().NetworkPolicies(ns).Create(ctx, &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "db-from-web"},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}}}},
		metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("networkpolicy: %w", err)
	}
	if _, err := c.Kube.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "quota"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("50"), corev1.ResourceConfigMaps: resource.MustParse("50")}}},
		metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("resourcequota: %w", err)
	}
	if _, err := c.Kube.CoreV1().LimitRanges(ns).Create(ctx, &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "defaults"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
			Default: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}}}}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("limitrange: %w", err)
	}
	if _, err := c.Kube.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}},
		metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("pdb: %w", err)
	}
	_, err := c.Kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas: ptr.To(int32(1)), MaxReplicas: 3,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(int32(80))}}}}}},
		metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("hpa: %w", err)
	}
	return nil
}

// appVolumes makes the volumes the claims bind: no provisioner runs here,
// so each is made beforehand, as an administrator makes static volumes,
// for the claim of that name only.
func (c *Cluster) appVolumes(ctx context.Context, a *App, _ int64) error {
	for _, claim := range []string{"data-db-0", "main-data"} {
		name := "pv-" + a.Namespace + "-" + claim
		pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: a.Reclaim,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + name}},
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: a.Namespace, Name: claim},
		}}
		if _, err := c.Kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("persistentvolume %s: %w", name, err)
		}
		a.Volumes = append(a.Volumes, name)
	}
	return nil
}

func (c *Cluster) appServices(ctx context.Context, a *App, _ int64) error {
	ns := a.Namespace
	services := []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: "db", Labels: helmLabels("db")}, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone,
			Selector: map[string]string{"app": "db"}, Ports: []corev1.ServicePort{{Name: "sql", Port: 5432}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: helmLabels("web")}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort,
			Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), NodePort: a.NodePort}}}},
	}
	for _, s := range services {
		if _, err := c.Kube.CoreV1().Services(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("service %s: %w", s.Name, err)
		}
	}
	_, err := c.Kube.NetworkingV1().Ingresses(ns).Create(ctx, &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: networkingv1.IngressSpec{TLS: []networkingv1.IngressTLS{{Hosts: []string{"shop.example"}, SecretName: "web-tls"}},
			Rules: []networkingv1.IngressRule{{Host: "shop.example", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix), Backend: networkingv1.IngressBackend{
					Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}}},
		metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("ingress: %w", err)
	}
	return nil
}

func (c *Cluster) appWorkloads(ctx context.Context, a *App, grace int64) error {
	ns := a.Namespace
	pod := func(app string) corev1.PodSpec {
		return corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To(grace), Containers: []corev1.Container{{Name: app, Image: "registry.example/" + app + ":1.0"}}}
	}
	web := pod("web")
	web.ServiceAccountName = "web"
	web.Volumes = []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}}}}}
	if _, err := c.Kube.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: helmLabels("web")},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"},
				Annotations: map[string]string{"checksum/config": "5f0c7d3c1c1e2a9b"}}, Spec: web}}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("deployment web: %w", err)
	}
	if _, err := c.Kube.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Labels: helmLabels("db")},
		Spec: appsv1.StatefulSetSpec{ServiceName: "db", Replicas: ptr.To(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}}, Spec: withMount(pod("db"), "data")},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: ptr.To(""),
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}}}},
		metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("statefulset db: %w", err)
	}
	migrate := pod("migrate")
	migrate.RestartPolicy = corev1.RestartPolicyNever
	if _, err := c.Kube.BatchV1().Jobs(ns).Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "migrate", Labels: helmLabels("migrate")},
		Spec: batchv1.JobSpec{BackoffLimit: ptr.To(int32(1)), Template: corev1.PodTemplateSpec{Spec: migrate}}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("job migrate: %w", err)
	}
	report := pod("report")
	report.RestartPolicy = corev1.RestartPolicyOnFailure
	if _, err := c.Kube.BatchV1().CronJobs(ns).Create(ctx, &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "report"},
		Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: report}}}}},
		metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("cronjob report: %w", err)
	}
	return nil
}

func withMount(spec corev1.PodSpec, volume string) corev1.PodSpec {
	spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: volume, MountPath: "/var/lib/" + volume}}
	return spec
}

// appDatabase makes what a database operator makes for its custom
// resource: a claim for its data and a Secret with generated credentials,
// both with a controller owner reference to the Database.
func (c *Cluster) appDatabase(ctx context.Context, a *App, _ int64) error {
	ns := a.Namespace
	db, err := c.Dynamic.Resource(DatabasesGVR).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": AppGroup + "/v1", "kind": "Database", "metadata": map[string]any{"name": "main"},
		"spec": map[string]any{"engine": "postgres", "version": "17", "storage": "1Gi"},
	}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("database main: %w", err)
	}
	owner := []metav1.OwnerReference{{APIVersion: AppGroup + "/v1", Kind: "Database", Name: "main", UID: db.GetUID(),
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	if _, err := c.Kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "main-data", OwnerReferences: owner, Labels: map[string]string{"database": "main"}},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: ptr.To(""),
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}},
		metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("claim main-data: %w", err)
	}
	if _, err := c.Kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "main-app", OwnerReferences: owner,
		Labels: map[string]string{"database": "main"}}, Type: corev1.SecretTypeBasicAuth,
		Data: map[string][]byte{"username": []byte("app"), "password": []byte("generated-Zx81q")}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("secret main-app: %w", err)
	}
	return nil
}

func (c *Cluster) appWidget(ctx context.Context, a *App, _ int64) error {
	w, err := c.Dynamic.Resource(WidgetsGVR).Namespace(a.Namespace).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": AppGroup + "/v1", "kind": "Widget", "metadata": map[string]any{"name": "front"},
		"spec": map[string]any{"size": int64(3), "color": "blue"},
	}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("widget front: %w", err)
	}
	w.Object["status"] = map[string]any{"ready": true}
	if _, err := c.Dynamic.Resource(WidgetsGVR).Namespace(a.Namespace).UpdateStatus(ctx, w, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("widget front's status: %w", err)
	}
	return nil
}

// waitRunning waits until the Deployment and the StatefulSet have their
// pods Ready and the claims are Bound.
func (c *Cluster) waitRunning(ctx context.Context, ns string) error {
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		d, err := c.Kube.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil || d.Status.ReadyReplicas != 2 {
			return false, nil
		}
		s, err := c.Kube.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil || s.Status.ReadyReplicas != 1 {
			return false, nil
		}
		for _, claim := range []string{"data-db-0", "main-data"} {
			pvc, err := c.Kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{})
			if err != nil || pvc.Status.Phase != corev1.ClaimBound {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("the app in %s does not run: %w", ns, err)
	}
	return nil
}

// ensureStatusCRD creates a namespaced CRD of AppGroup with a status
// subresource, unless it is there, and waits until it serves.
func (c *Cluster) ensureStatusCRD(ctx context.Context, kind, plural string) error {
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + "." + AppGroup},
		"spec": map[string]any{
			"group": AppGroup, "scope": "Namespaced",
			"names": map[string]any{"kind": kind, "plural": plural, "singular": strings.ToLower(kind), "listKind": kind + "List"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"schema":       map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	}}
	if _, err := c.Dynamic.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating CRD %s.%s: %w", plural, AppGroup, err)
	}
	gvr := schema.GroupVersionResource{Group: AppGroup, Version: "v1", Resource: plural}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := c.Dynamic.Resource(gvr).Namespace("default").List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
}

func helmLabels(component string) map[string]string {
	return map[string]string{"app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/instance": "shop",
		"app.kubernetes.io/name": "shop", "app.kubernetes.io/component": component, "helm.sh/chart": "shop-1.2.3"}
}
