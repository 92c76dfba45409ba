import { describe, expect, it } from 'vitest';
import { classifyCampo, findDivergencias, isRegistro30, labelKey, splitConteudo, toDivergencia, type RetornoRow } from '@censo/shared';

const RF = 'O campo não está de acordo com a base da Receita Federal.';

function row(over: Partial<RetornoRow> = {}): RetornoRow {
  return {
    registro: '30',
    linha: '2',
    codigo: 'ALU0001',
    campo: 'Número do CPF',
    mensagem: RF,
    conteudo: '52998224725 -- 52998224726',
    ...over,
  };
}

describe('rule 1: record 30', () => {
  it.each(['30', '030', 'Registro 30', '30 - Pessoa física', ' 30 ', 'Registro: 030'])('%j counts', (registro) => {
    expect(isRegistro30(registro)).toBe(true);
  });
  it.each(['60', '300', '3', '', 'Registro', 'Registro 60 (30)', '31 - x'])('%j does not count', (registro) => {
    expect(isRegistro30(registro)).toBe(false);
  });
  it('counts every row when the return has no registro column', () => {
    expect(isRegistro30(null)).toBe(true);
    expect(toDivergencia(row({ registro: null }))).not.toBeNull();
  });
});

describe('rule 2: cites the Receita Federal', () => {
  it.each([
    RF,
    'Divergente da RECEITA FEDERAL',
    'divergência na base da Receita  Federal',
    'Dado divergente (RFB).',
    'RFB: nome divergente',
    'conforme rfb',
  ])('%j counts', (mensagem) => {
    expect(toDivergencia(row({ mensagem }))).not.toBeNull();
  });
  it.each(['O campo foi preenchido com valor não permitido.', 'Receita estadual', 'RFBX divergente', 'xrfb', 'federal receita'])(
    '%j does not count',
    (mensagem) => {
      expect(toDivergencia(row({ mensagem }))).toBeNull();
    },
  );
});

describe('rule 3: content <sent> -- <correct>', () => {
  it('splits at the first --, trims both sides', () => {
    expect(splitConteudo('  a b  --  c -- d ')).toEqual({ enviado: 'a b', correto: 'c -- d' });
    expect(splitConteudo('x---y')).toEqual({ enviado: 'x', correto: '-y' });
  });
  it('allows an empty sent side', () => {
    expect(splitConteudo(' -- 123')).toEqual({ enviado: '', correto: '123' });
  });
  it.each(['', 'FULANO DE TAL', 'a - b', 'a --', 'a --   '])('rejects %j', (conteudo) => {
    expect(splitConteudo(conteudo)).toBeNull();
    expect(toDivergencia(row({ conteudo }))).toBeNull();
  });
});

describe('label → chave', () => {
  it('strips numbering and trailing punctuation, keeps brackets', () => {
    expect(labelKey('5 - Número do CPF')).toBe('numero do cpf');
    expect(labelKey('5b - Número do CPF:')).toBe('numero do cpf');
    expect(labelKey('  Identificação  única (Inep) . ')).toBe('identificacao unica (inep)');
    expect(labelKey('Nome completo ;,-')).toBe('nome completo');
  });

  it.each([
    ['Número do CPF', 'cpf'],
    ['CPF', 'cpf'],
    ['5 - Número do CPF', 'cpf'],
    ['Nome completo', 'nome'],
    ['NOME', 'nome'],
    ['6b - Nome completo:', 'nome'],
    ['Data de nascimento', 'data_nascimento'],
    ['Data de Nascimento.', 'data_nascimento'],
    ['Identificação única', 'inep'],
    ['Identificação única (Inep)', 'inep'],
    ['Código INEP', 'inep'],
    ['ID INEP', 'inep'],
    ['4 - Identificação única (Inep):', 'inep'],
  ])('%j → %j', (campo, chave) => {
    expect(classifyCampo(campo, RF)).toEqual({ chave, is_filiacao: false });
  });

  it.each(['Sexo', 'Cor/Raça', 'Nome da mãe', 'Nome social', 'CPF do responsável', 'Identificação única (Inep) do aluno', '[Inep]'])(
    '%j → null',
    (campo) => {
      expect(classifyCampo(campo, RF)).toEqual({ chave: null, is_filiacao: false });
    },
  );

  it('keeps an unmapped label null even when the message speaks of a parent', () => {
    expect(classifyCampo('Sexo', 'Nome da mãe diverge da Receita Federal')).toEqual({ chave: null, is_filiacao: false });
  });
});

describe('filiation', () => {
  it.each([
    // Under an identification label, only the message tells.
    ['Identificação única (Inep)', 'Filiação 1 (nome da mãe) não está de acordo com a base da Receita Federal.', 'nome_mae'],
    ['Identificação única (Inep)', 'O nome do pai (Filiação 2) não confere com a base da Receita Federal.', 'nome_pai'],
    ['Código INEP', 'Nome da mãe divergente da Receita Federal', 'nome_mae'],
    ['ID INEP', 'Nome do pai divergente da RFB', 'nome_pai'],
    ['Identificação única', 'Filiação divergente da Receita Federal', 'nome_mae'],
    // Any label with the word filiacao.
    ['Filiação 1', RF, 'nome_mae'],
    ['Filiação 2', RF, 'nome_pai'],
    ['9 - Filiação 1:', RF, 'nome_mae'],
    ['Filiação', RF, 'nome_mae'],
    ['Filiação', 'Nome do pai divergente da Receita Federal', 'nome_pai'],
    // Explicit number: label first, then message.
    ['Filiação 1', 'Nome do pai (filiação 2) divergente da Receita Federal', 'nome_mae'],
    ['Filiação 2', 'Nome da mãe (filiação 1) divergente da Receita Federal', 'nome_pai'],
    ['Filiação', 'Filiação 1 do pai divergente da Receita Federal', 'nome_mae'],
    ['Filiação (pai)', RF, 'nome_pai'],
  ])('%j + %j → %j', (campo, mensagem, chave) => {
    expect(classifyCampo(campo, mensagem)).toEqual({ chave, is_filiacao: true });
  });

  it('needs whole words', () => {
    // "país" normalises to "pais", which is not the word "pai"; "filiacaox" is not "filiacao".
    expect(classifyCampo('Identificação única (Inep)', 'País divergente da Receita Federal')).toEqual({
      chave: 'inep',
      is_filiacao: false,
    });
    expect(classifyCampo('Identificação única (Inep)', 'Campo maestro da Receita Federal')).toEqual({ chave: 'inep', is_filiacao: false });
    expect(classifyCampo('Filiacaox', RF)).toEqual({ chave: null, is_filiacao: false });
  });
});

describe('toDivergencia', () => {
  it('builds the SPEC §3.1 object with the label and code as written', () => {
    expect(toDivergencia(row({ codigo: ' ALU0001 ', campo: '5 - Número do CPF ' }))).toEqual({
      codigo_na_escola: 'ALU0001',
      linha: '2',
      campo: '5 - Número do CPF ',
      enviado: '52998224725',
      correto: '52998224726',
      is_filiacao: false,
      chave: 'cpf',
    });
  });

  it('gives linha "" when the return has no linha column', () => {
    expect(toDivergencia(row({ linha: null }))?.linha).toBe('');
  });

  it('keeps the field order of the wire format', () => {
    expect(Object.keys(toDivergencia(row())!)).toEqual([
      'codigo_na_escola',
      'linha',
      'campo',
      'enviado',
      'correto',
      'is_filiacao',
      'chave',
    ]);
  });

  it('findDivergencias keeps return order and drops other rows', async () => {
    const rows = [
      row({ linha: '3', conteudo: 'a -- b' }),
      row({ registro: '60' }),
      row({ linha: '2', conteudo: 'c -- d' }),
      row({ mensagem: 'outro erro' }),
    ];
    async function* source() {
      yield* rows;
    }
    const out = [];
    for await (const d of findDivergencias(source())) out.push([d.linha, d.correto]);
    expect(out).toEqual([
      ['3', 'b'],
      ['2', 'd'],
    ]);
  });
});
