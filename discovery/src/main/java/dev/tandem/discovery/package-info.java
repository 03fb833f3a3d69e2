/**
 * The worker registry behind one SPI ({@link dev.tandem.discovery.Discovery}): workers register a
 * {@link dev.tandem.discovery.WorkerRecord}, routers and the planner watch the set. Backends: static
 * (addresses on the command line and workers of the same process), etcd (a key per worker under a
 * kept-alive lease, through jetcd) and Kubernetes (ready endpoints of the role Services, through
 * fabric8 informers).
 */
package dev.tandem.discovery;
