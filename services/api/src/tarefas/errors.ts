// The answers of SPEC §7 that are not the upload routes' own, as CensoErrors: the one error
// handler (plugins/errors.ts) turns them into `{"erro"}` bodies like every other.
import { BadInputError, CensoError } from '@censo/shared';

export const mensagens = {
  tarefaNaoEncontrada: 'Tarefa não encontrada.',
  loteNaoEncontrado: 'Lote não encontrado.',
  naoConcluida: 'Tarefa ainda não concluída.',
  cancelada: 'Tarefa cancelada.',
  loteFechado: 'Lote fechado.',
  loteNaoConcluido: 'Lote ainda não concluído.',
  muitosLotes: 'Muitos lotes abertos.',
  idemOutra: 'Idempotency-Key já usada com outra requisição.',
  idemEmAndamento: 'Requisição com esta Idempotency-Key em andamento.',
} as const;

export class NotFoundError extends CensoError {
  readonly status = 404;
  readonly code = 'NOT_FOUND';
}

export class ConflictError extends CensoError {
  readonly status = 409;
  readonly code = 'CONFLICT';
}

/** 422: an Idempotency-Key already used with another request (SPEC §7.2). */
export class IdempotencyMismatchError extends CensoError {
  readonly status = 422;
  readonly code = 'IDEMPOTENCY_MISMATCH';
  constructor() {
    super(mensagens.idemOutra);
  }
}

/** 429: the principal holds MAX_LOTES_ABERTOS open batches already (SPEC §7.3). */
export class TooManyLotesError extends CensoError {
  readonly status = 429;
  readonly code = 'TOO_MANY_LOTES';
  constructor() {
    super(mensagens.muitosLotes);
  }
}

export const tarefaNaoEncontrada = () => new NotFoundError(mensagens.tarefaNaoEncontrada);
export const loteNaoEncontrado = () => new NotFoundError(mensagens.loteNaoEncontrado);

/** The 400s SPEC §7 leaves to the implementation (README lists them). */
export const invalido = {
  idempotencyKey: () => new BadInputError('Idempotency-Key inválida: use de 1 a 255 caracteres ASCII imprimíveis.'),
  referencia: () => new BadInputError('Campo referencia deve ter até 255 caracteres.'),
  estado: () => new BadInputError('Parâmetro estado deve ser aguardando, processando, concluida, falhou ou cancelada.'),
  limit: () => new BadInputError('Parâmetro limit deve ser um número inteiro de 1 a 1000.'),
  cursor: () => new BadInputError('Parâmetro cursor inválido.'),
  parcial: () => new BadInputError('Parâmetro parcial deve ser true ou false.'),
  formatoCorrigido: () => new BadInputError('Parâmetro format não se aplica ao arquivo corrigido, que é sempre o txt do Censo.'),
  anterior: () => new BadInputError('Parâmetro anterior deve ser o id de outro lote (a rodada anterior).'),
  corpo: () => new BadInputError('O corpo deve ser um objeto JSON (campos opcionais nome e webhook).'),
  nome: () => new BadInputError('Campo nome deve ser um texto de até 200 caracteres.'),
  webhook: (motivo: string) => new BadInputError(`Webhook inválido: ${motivo}.`),
} as const;
