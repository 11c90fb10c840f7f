#!/usr/bin/env node
// noded-state-store: the state-store service on its own, what its image runs (no CLI in it): the same options
// and behaviour as `noded service state-store` (docs/cluster.md "Per-service images").
import { serviceMain } from '@noded/service-shared/src/run.js';
import { stateStoreModule } from './state-store.module.js';

await serviceMain('state-store', stateStoreModule);
