// The seed's page tools, as a source publishes them: cryptic names, cryptic parameters.
import type { Tool } from '@tool-mediator/node'

export const seedTools: Tool[] = [
  {
    name: 'gt_usr',
    description: 'gets user',
    inputSchema: { type: 'object', properties: { uid: { type: 'number' }, eml: { type: 'string' } } },
  },
  {
    name: 'del',
    description: 'delete',
    inputSchema: { type: 'object', properties: { uid: { type: 'number' } }, required: ['uid'] },
  },
  {
    name: 'upd_prf',
    description: 'update profile',
    inputSchema: {
      type: 'object',
      properties: { uid: { type: 'number' }, nm: { type: 'string' }, bio: { type: 'string' } },
      required: ['uid'],
    },
  },
]
