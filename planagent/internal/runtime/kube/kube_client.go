package kube

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// What the runtime uses of the Kubernetes API: Jobs, Pods (list, logs),
// Secrets and Namespaces. In the binary kubeClient serves it: the REST
// clients of core/v1 and batch/v1 over a scheme of only those two groups.
// client-go's kubernetes.Clientset would do the same, but it links every
// API group and its typed clients, and its scheme package registers them
// all at start: megabytes of planagent's code and data resident in every
// run, Kubernetes or not. The tests wrap the fake clientset.
type kubeAPI interface {
	Jobs(namespace string) kubeJobs
	Pods(namespace string) kubePods
	Secrets(namespace string) kubeSecrets
	Namespaces() kubeNamespaces
	NetworkPolicies(namespace string) kubeNetworkPolicies
}

// kubeJobs is the part of client-go's JobInterface the runtime uses.
type kubeJobs interface {
	Create(ctx context.Context, job *batchv1.Job, opts metav1.CreateOptions) (*batchv1.Job, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*batchv1.Job, error)
	List(ctx context.Context, opts metav1.ListOptions) (*batchv1.JobList, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// kubePods is the part of client-go's PodInterface the runtime uses.
type kubePods interface {
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error)
	GetLogs(name string, opts *corev1.PodLogOptions) *rest.Request
}

// kubeSecrets is the part of client-go's SecretInterface the runtime uses.
type kubeSecrets interface {
	Create(ctx context.Context, secret *corev1.Secret, opts metav1.CreateOptions) (*corev1.Secret, error)
	Update(ctx context.Context, secret *corev1.Secret, opts metav1.UpdateOptions) (*corev1.Secret, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Secret, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.SecretList, error)
}

// kubeNetworkPolicies is the part of client-go's NetworkPolicyInterface
// the runtime uses.
type kubeNetworkPolicies interface {
	Create(ctx context.Context, policy *networkingv1.NetworkPolicy, opts metav1.CreateOptions) (*networkingv1.NetworkPolicy, error)
	Update(ctx context.Context, policy *networkingv1.NetworkPolicy, opts metav1.UpdateOptions) (*networkingv1.NetworkPolicy, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// kubeNamespaces is the part of client-go's NamespaceInterface the runtime uses.
type kubeNamespaces interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Namespace, error)
}

// kubeClient talks to the API server as client-go's typed clients of
// core/v1 and batch/v1 do (kubernetes.NewForConfig): one HTTP client and
// one rate limiter shared by both, the same codecs (protobuf preferred
// where client-go prefers it), the same requests.
type kubeClient struct {
	core, batch, networking *rest.RESTClient
	params                  k8sruntime.ParameterCodec
}

var _ kubeAPI = (*kubeClient)(nil)

// newKubeClient builds the clients for cfg, which it does not change.
func newKubeClient(cfg *rest.Config) (*kubeClient, error) {
	scheme := k8sruntime.NewScheme()
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("register core/v1: %w", err)
	}
	if err := batchv1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("register batch/v1: %w", err)
	}
	if err := networkingv1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("register networking/v1: %w", err)
	}
	codecs := rest.CodecFactoryForGeneratedClient(scheme, serializer.NewCodecFactory(scheme)).WithoutConversion()

	shared := *cfg
	if shared.UserAgent == "" {
		shared.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	httpClient, err := rest.HTTPClientFor(&shared)
	if err != nil {
		return nil, err
	}
	if shared.RateLimiter == nil && shared.QPS > 0 {
		if shared.Burst <= 0 {
			return nil, errors.New("burst is required to be greater than 0 when RateLimiter is not set and QPS is set to greater than 0")
		}
		shared.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(shared.QPS, shared.Burst)
	}
	restFor := func(gv schema.GroupVersion, apiPath string) (*rest.RESTClient, error) {
		c := shared
		c.GroupVersion = &gv
		c.APIPath = apiPath
		c.NegotiatedSerializer = codecs
		return rest.RESTClientForConfigAndClient(&c, httpClient)
	}
	core, err := restFor(corev1.SchemeGroupVersion, "/api")
	if err != nil {
		return nil, err
	}
	batch, err := restFor(batchv1.SchemeGroupVersion, "/apis")
	if err != nil {
		return nil, err
	}
	networking, err := restFor(networkingv1.SchemeGroupVersion, "/apis")
	if err != nil {
		return nil, err
	}
	return &kubeClient{core: core, batch: batch, networking: networking, params: k8sruntime.NewParameterCodec(scheme)}, nil
}

func (c *kubeClient) NetworkPolicies(namespace string) kubeNetworkPolicies {
	return &kubeResource[*networkingv1.NetworkPolicy, *networkingv1.NetworkPolicyList]{client: c.networking, params: c.params, resource: "networkpolicies", namespace: namespace,
		newObject: func() *networkingv1.NetworkPolicy { return &networkingv1.NetworkPolicy{} }, newList: func() *networkingv1.NetworkPolicyList { return &networkingv1.NetworkPolicyList{} }}
}

func (c *kubeClient) Jobs(namespace string) kubeJobs {
	return &kubeResource[*batchv1.Job, *batchv1.JobList]{client: c.batch, params: c.params, resource: "jobs", namespace: namespace,
		newObject: func() *batchv1.Job { return &batchv1.Job{} }, newList: func() *batchv1.JobList { return &batchv1.JobList{} }}
}

func (c *kubeClient) Pods(namespace string) kubePods {
	return &kubePodClient{kubeResource[*corev1.Pod, *corev1.PodList]{client: c.core, params: c.params, resource: "pods", namespace: namespace,
		newObject: func() *corev1.Pod { return &corev1.Pod{} }, newList: func() *corev1.PodList { return &corev1.PodList{} }}}
}

func (c *kubeClient) Secrets(namespace string) kubeSecrets {
	return &kubeResource[*corev1.Secret, *corev1.SecretList]{client: c.core, params: c.params, resource: "secrets", namespace: namespace,
		newObject: func() *corev1.Secret { return &corev1.Secret{} }, newList: func() *corev1.SecretList { return &corev1.SecretList{} }}
}

func (c *kubeClient) Namespaces() kubeNamespaces {
	return &kubeResource[*corev1.Namespace, *corev1.NamespaceList]{client: c.core, params: c.params, resource: "namespaces",
		newObject: func() *corev1.Namespace { return &corev1.Namespace{} }, newList: func() *corev1.NamespaceList { return &corev1.NamespaceList{} }}
}

// execURL is the pods/exec URL of a command in a pod, as client-go's
// CoreV1().RESTClient() builds it for kubectl exec.
func (c *kubeClient) execURL(namespace, pod string, opts *corev1.PodExecOptions) *url.URL {
	return c.core.Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
		VersionedParams(opts, c.params).URL()
}

// kubeObject is an API object with its metadata.
type kubeObject interface {
	k8sruntime.Object
	GetName() string
}

// kubeResource makes the calls of one resource as client-go's generated
// clients make them (k8s.io/client-go/gentype, not linked: it brings in
// client-go's fakes, and with them managed fields and OpenAPI models):
// protobuf preferred, as for every core/v1 and batch/v1 type; namespace ""
// for a cluster-scoped resource.
type kubeResource[T kubeObject, L k8sruntime.Object] struct {
	client    *rest.RESTClient
	params    k8sruntime.ParameterCodec
	resource  string
	namespace string
	newObject func() T
	newList   func() L
}

func (c *kubeResource[T, L]) Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error) {
	result := c.newObject()
	err := c.client.Get().
		UseProtobufAsDefault().
		NamespaceIfScoped(c.namespace, c.namespace != "").
		Resource(c.resource).
		Name(name).
		VersionedParams(&opts, c.params).
		Do(ctx).
		Into(result)
	return result, err
}

func (c *kubeResource[T, L]) List(ctx context.Context, opts metav1.ListOptions) (L, error) {
	list := c.newList()
	var timeout time.Duration
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	err := c.client.Get().
		UseProtobufAsDefault().
		NamespaceIfScoped(c.namespace, c.namespace != "").
		Resource(c.resource).
		VersionedParams(&opts, c.params).
		Timeout(timeout).
		Do(ctx).
		Into(list)
	return list, err
}

func (c *kubeResource[T, L]) Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error) {
	result := c.newObject()
	err := c.client.Post().
		UseProtobufAsDefault().
		NamespaceIfScoped(c.namespace, c.namespace != "").
		Resource(c.resource).
		VersionedParams(&opts, c.params).
		Body(obj).
		Do(ctx).
		Into(result)
	return result, err
}

func (c *kubeResource[T, L]) Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	result := c.newObject()
	err := c.client.Put().
		UseProtobufAsDefault().
		NamespaceIfScoped(c.namespace, c.namespace != "").
		Resource(c.resource).
		Name(obj.GetName()).
		VersionedParams(&opts, c.params).
		Body(obj).
		Do(ctx).
		Into(result)
	return result, err
}

func (c *kubeResource[T, L]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return c.client.Delete().
		UseProtobufAsDefault().
		NamespaceIfScoped(c.namespace, c.namespace != "").
		Resource(c.resource).
		Name(name).
		Body(&opts).
		Do(ctx).
		Error()
}

// kubePodClient adds the log request of client-go's pod client.
type kubePodClient struct {
	kubeResource[*corev1.Pod, *corev1.PodList]
}

func (p *kubePodClient) GetLogs(name string, opts *corev1.PodLogOptions) *rest.Request {
	return p.client.Get().Namespace(p.namespace).Name(name).Resource("pods").SubResource("log").
		VersionedParams(opts, p.params)
}
