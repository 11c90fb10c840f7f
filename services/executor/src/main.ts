#!/usr/bin/env node
// noded-executor: the executor service on its own, what its image runs (no CLI in it): the same options
// and behaviour as `noded service executor` (docs/cluster.md "Per-service images").
import { serviceMain } from '@noded/service-shared/src/run.js';
import { executorModule } from './executor.module.js';

await serviceMain('executor', executorModule);
