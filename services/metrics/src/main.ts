#!/usr/bin/env node
// noded-metrics: the metrics service on its own, what its image runs (no CLI in it): the same options
// and behaviour as `noded service metrics` (docs/cluster.md "Per-service images").
import { serviceMain } from '@noded/service-shared/src/run.js';
import { metricsModule } from './metrics.module.js';

await serviceMain('metrics', metricsModule);
